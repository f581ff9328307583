#!/usr/bin/env python3
"""The sharding recipes of docs/scaling.md, run on this machine: each splits an audit of the demo CNN's
samples into shards, merges them, and must give the very bytes of one audit of every sample.

- scripts/audit-shards.sh: 4 shards through xargs -P.
- deploy/slurm/mpaudit-shards.sbatch: its array tasks run as Slurm would start them (SLURM_ARRAY_TASK_ID
  and SLURM_ARRAY_TASK_COUNT set), after a bash syntax check.
- deploy/kubernetes/*.yaml: parsed and checked as an Indexed Job (completion mode, completions =
  parallelism = shard count, JOB_COMPLETION_INDEX in the command), then each pod's command run with its
  index, the model path and sample count swapped for the demo's, and the merge Job's command.

Usage: check_shard_recipes.py --mpaudit build/mpaudit
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from checklist import Checklist  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
MODEL = ROOT / "models" / "demo" / "tiny_cnn.onnx"
AUDIT = ["--samples", "8", "--seed", "3", "--target", "fp16", "--target", "bf16"]


def run(cmd, env=None, ok=(0,)) -> subprocess.CompletedProcess:
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode not in ok:
        sys.exit(f"FAIL: {cmd if isinstance(cmd, str) else ' '.join(map(str, cmd))}: exit {r.returncode}\n{r.stderr}")
    return r


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mpaudit", type=Path, required=True)
    args = parser.parse_args()
    mpaudit = args.mpaudit.resolve()
    check = Checklist("check_shard_recipes")

    with tempfile.TemporaryDirectory(prefix="mpaudit-shards-") as tmp:
        work = Path(tmp)
        single = work / "single.json"
        run([mpaudit, "audit", MODEL, *AUDIT, "--quiet", "--json", single])
        expected = single.read_bytes()
        env = {**os.environ, "MPAUDIT": str(mpaudit)}

        merged = work / "local.json"
        run([ROOT / "scripts" / "audit-shards.sh", "-n", "4", "-j", "2", "-o", merged, MODEL, *AUDIT, "--quiet"], env=env)
        check(merged.read_bytes() == expected, "scripts/audit-shards.sh: 4 shards merge to the single audit's bytes")

        sbatch = ROOT / "deploy" / "slurm" / "mpaudit-shards.sbatch"
        run(["bash", "-n", sbatch])
        reports = work / "slurm"
        for task in range(1, 5):
            run(["bash", sbatch, MODEL, *AUDIT],
                env={**env, "SLURM_ARRAY_TASK_ID": str(task), "SLURM_ARRAY_TASK_COUNT": "4", "REPORTS": str(reports)})
        run([mpaudit, "merge", *sorted(reports.glob("shard-*.json")), "-o", work / "slurm.json", "--quiet"])
        check((work / "slurm.json").read_bytes() == expected, "Slurm array tasks 1..4 merge to the single audit's bytes")

        jobs = {doc["metadata"]["name"]: doc
                for f in sorted((ROOT / "deploy" / "kubernetes").glob("*.yaml"))
                for doc in yaml.safe_load_all(f.read_text())}
        shards = jobs.get("mpaudit-shards", {})
        spec = shards.get("spec", {})
        pod = spec.get("template", {}).get("spec", {})
        container = (pod.get("containers") or [{}])[0]
        check(shards.get("apiVersion") == "batch/v1" and shards.get("kind") == "Job", "the shard Job is a batch/v1 Job")
        check(spec.get("completionMode") == "Indexed" and spec.get("completions") == spec.get("parallelism") == 8,
              "it is Indexed, with completions = parallelism = 8")
        check(pod.get("restartPolicy") == "Never" and "JOB_COMPLETION_INDEX" in " ".join(container.get("args", [])),
              "its pods take their shard from JOB_COMPLETION_INDEX and do not restart")
        bin_dir = work / "bin"
        bin_dir.mkdir()
        shutil.copy(mpaudit, bin_dir / "mpaudit")
        k8s_env = {**env, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
        (work / "k8s").mkdir()
        command = container["args"][0].replace("/models/model.onnx --samples 1000 --seed 7", f"{MODEL} {' '.join(AUDIT)}")
        command = command.replace("/reports/", f"{work / 'k8s'}/")
        for index in range(8):
            run(["/bin/sh", "-c", command], env={**k8s_env, "JOB_COMPLETION_INDEX": str(index)})
        merge_job = jobs.get("mpaudit-merge", {}).get("spec", {}).get("template", {}).get("spec", {})
        merge_command = merge_job["containers"][0]["args"][0].replace("/reports/", f"{work / 'k8s'}/") + " --quiet"
        run(["/bin/sh", "-c", merge_command], env=k8s_env)
        check((work / "k8s" / "report.json").read_bytes() == expected,
              "the Indexed Job's 8 pods and the merge Job give the single audit's bytes")
        check((work / "k8s" / "report.junit.xml").is_file(), "the merge Job writes its JUnit report")

    return check.finish()


if __name__ == "__main__":
    sys.exit(main())
