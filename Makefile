# The two commands: `make demo` and `make test`. Each installs what is missing, builds, and runs.
BUILD ?= build
SAN_BUILD ?= build-sanitize
JOBS ?= $(shell nproc)
PY := .venv/bin/python

.PHONY: demo test test-sanitize deps build bench clean

deps:
	@bash scripts/install-deps.sh

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DPython3_EXECUTABLE=$(CURDIR)/$(PY)

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

demo: build
	$(BUILD)/mpaudit inspect models/demo/tiny_cnn.onnx
	$(BUILD)/mpaudit run models/demo/tiny_cnn.onnx --input image=models/demo/digit.npy --save-outputs $(BUILD)/demo-outputs

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

$(SAN_BUILD)/CMakeCache.txt:
	cmake -S . -B $(SAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DMPA_SANITIZE=ON -DPython3_EXECUTABLE=$(CURDIR)/$(PY)

test-sanitize: deps $(SAN_BUILD)/CMakeCache.txt
	cmake --build $(SAN_BUILD) -j $(JOBS)
	cd $(SAN_BUILD) && ASAN_OPTIONS=detect_leaks=0 ctest --output-on-failure -j $(JOBS) -L sanitize

bench: build
	$(PY) bench/run_bench.py --mpaudit $(BUILD)/mpaudit

clean:
	rm -rf $(BUILD) $(SAN_BUILD)
