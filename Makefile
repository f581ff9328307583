# The two commands: `make demo` and `make test`. Each installs what is missing, builds, and runs.
BUILD ?= build
SAN_BUILD ?= build-sanitize
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
JOBS ?= $(shell nproc)
PY := .venv/bin/python

.PHONY: demo demo-training test test-sanitize fuzz deps build bench bench-fix clean

deps:
	@bash scripts/install-deps.sh

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DPython3_EXECUTABLE=$(CURDIR)/$(PY)

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

demo: build
	@mkdir -p $(BUILD)/demo
	$(BUILD)/mpaudit run models/demo/tiny_cnn.onnx --input image=models/demo/digit.npy
	$(BUILD)/mpaudit audit models/demo/tiny_cnn.onnx --input image=models/demo/digit.npy \
	  --target fp16 --target bf16 --json $(BUILD)/demo/tiny_cnn.report.json
	@# The attention block carries two FP16 traps: the audit names them and exits 1 (its gate fails), as designed.
	$(BUILD)/mpaudit audit models/demo/tiny_attention.onnx --input hidden=models/demo/attention_hidden.npy \
	  --input attention_mask=models/demo/attention_mask.npy --json $(BUILD)/demo/tiny_attention.report.json; \
	  test $$? -eq 1
	@echo "reports: $(BUILD)/demo/tiny_cnn.report.json $(BUILD)/demo/tiny_attention.report.json"

# A 64-64-10 perceptron trained in numpy on scikit-learn's digits, dumping every step's gradients, weights and
# updates; `mpaudit tensors` then finds the loss scale, replays dynamic loss scaling and counts vanishing updates.
demo-training: build
	$(PY) -m pip install -q -r requirements-demo.txt
	@rm -rf $(BUILD)/demo-training
	$(PY) models/training/train_digits.py --out $(BUILD)/demo-training/run
	$(BUILD)/mpaudit tensors $(BUILD)/demo-training/run --grads 'grad.*' --master 'weight.*=update.*' \
	  --growth-interval 25 --json $(BUILD)/demo-training/report.json --fail-on 'fp16.vanished_frac>0.5'
	@echo "report: $(BUILD)/demo-training/report.json (open it with: $(BUILD)/mpaudit view $(BUILD)/demo-training/report.json)"

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

$(SAN_BUILD)/CMakeCache.txt:
	cmake -S . -B $(SAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DMPA_SANITIZE=ON -DPython3_EXECUTABLE=$(CURDIR)/$(PY)

test-sanitize: deps $(SAN_BUILD)/CMakeCache.txt
	cmake --build $(SAN_BUILD) -j $(JOBS)
	cd $(SAN_BUILD) && ASAN_OPTIONS=detect_leaks=0 ctest --output-on-failure -j $(JOBS) -L sanitize

# libFuzzer targets (tests/fuzz) built with clang under ASan/UBSan, each run FUZZ_SECONDS from its seeds, two at a
# time; a finding fails with the reproducer's path under $(FUZZ_BUILD)/artifacts (docs/fuzzing.md).
$(FUZZ_BUILD)/CMakeCache.txt:
	cmake -S . -B $(FUZZ_BUILD) -DCMAKE_CXX_COMPILER=clang++ -DMPA_FUZZ=ON -DBUILD_TESTING=OFF \
	  -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only"

fuzz: deps $(FUZZ_BUILD)/CMakeCache.txt
	cmake --build $(FUZZ_BUILD) -j $(JOBS) -t fuzzers
	tests/fuzz/run_fuzzers.sh $(FUZZ_BUILD) $(FUZZ_SECONDS) 2

bench: build
	$(PY) bench/run_bench.py --mpaudit $(BUILD)/mpaudit

# `mpaudit fix` against onnxconverter-common's auto_convert_mixed_precision (bench/README.md, "fix").
bench-fix: build
	$(PY) -m pip install -q --disable-pip-version-check --no-deps --require-hashes -r requirements-bench.txt
	$(PY) bench/fix_bench.py --mpaudit $(BUILD)/mpaudit

clean:
	rm -rf $(BUILD) $(SAN_BUILD) $(FUZZ_BUILD)
