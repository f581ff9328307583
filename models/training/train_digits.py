#!/usr/bin/env python3
"""A small network trained on a real data set, dumping what mixed-precision training would store, for
`mpaudit tensors` (make demo-training).

scikit-learn's digits (1797 8x8 images of handwritten digits, 10 classes) trains a 64-64-10 perceptron
(ReLU, softmax cross-entropy, mean over the batch) in float32 numpy with plain SGD. Every step writes its
own folder under OUT/step_NNNN: the gradients as one .npz (grad.fc1.w, grad.fc1.b, ...), the weights before
the step as .safetensors (weight.fc1.w, ...) and the updates -lr * g as .npy files (update.fc1.w.npy, ...),
so the run exercises every reader. Deterministic (seeded); prints the training and held-out accuracy.

Usage: .venv/bin/python models/training/train_digits.py --out build/demo-training/run [--steps 120]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from sklearn.datasets import load_digits

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "support"))
from tensor_files import write_safetensors  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--steps", type=int, default=120)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.05)
    args = parser.parse_args()

    x, y = load_digits(return_X_y=True)
    x = (x / 16.0).astype(np.float32)
    rng = np.random.default_rng(0)
    order = rng.permutation(len(x))
    train, held_out = order[:1500], order[1500:]
    params = {"fc1.w": (rng.standard_normal((64, 64)) * np.sqrt(2 / 64)).astype(np.float32),
              "fc1.b": np.zeros(64, np.float32),
              "fc2.w": (rng.standard_normal((64, 10)) * np.sqrt(2 / 64)).astype(np.float32),
              "fc2.b": np.zeros(10, np.float32)}

    def forward(batch: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        hidden = np.maximum(batch @ params["fc1.w"] + params["fc1.b"], 0)
        logits = hidden @ params["fc2.w"] + params["fc2.b"]
        return hidden, logits

    def accuracy(indices: np.ndarray) -> float:
        return float(np.mean(forward(x[indices])[1].argmax(1) == y[indices]))

    lr = np.float32(args.lr)
    for step in range(args.steps):
        batch = rng.choice(train, args.batch, replace=False)
        hidden, logits = forward(x[batch])
        probs = np.exp(logits - logits.max(1, keepdims=True))
        probs /= probs.sum(1, keepdims=True)
        d_logits = probs.copy()
        d_logits[np.arange(args.batch), y[batch]] -= 1
        d_logits /= args.batch  # the mean loss's gradient: small values, as mixed precision sees them
        d_hidden = (d_logits @ params["fc2.w"].T) * (hidden > 0)
        grads = {"fc2.w": hidden.T @ d_logits, "fc2.b": d_logits.sum(0),
                 "fc1.w": x[batch].T @ d_hidden, "fc1.b": d_hidden.sum(0)}
        folder = args.out / f"step_{step:04d}"
        folder.mkdir(parents=True, exist_ok=True)
        np.savez(folder / "grads.npz", **{f"grad.{k}": g.astype(np.float32) for k, g in grads.items()})
        write_safetensors(folder / "weights.safetensors", {f"weight.{k}": v for k, v in params.items()})
        for k, g in grads.items():
            update = (-lr * g).astype(np.float32)
            np.save(folder / f"update.{k}.npy", update)
            params[k] = params[k] + update
    print(f"trained {args.steps} steps of {args.batch}: accuracy {accuracy(train):.3f} (train), "
          f"{accuracy(held_out):.3f} (held out); dumps in {args.out}")


if __name__ == "__main__":
    main()
