"""The default embedder computes its model's own vectors on this CPU, whatever the CPU.

The shipped model is int8. onnxruntime multiplies its uint8 activations by int8 weights, on an
x86 CPU without VNNI (AVX2 only), in pairs summed into 16 bits that saturate; with the weights
stored as uint8 (zero point 128, the same numbers) the products are exact everywhere. ONNX's
reference evaluator runs the same graph in numpy, exactly: the embedder must agree with it.
With the int8 weights this failed on an AVX2-only EPYC (cosine 0.967 on "Thanks!", up to 0.04
off in one dimension) and the rankings of three tests differed from a VNNI machine's.
"""

from __future__ import annotations

import numpy as np
import onnx  # the test extra: its reference evaluator
from onnx import numpy_helper
from onnx.reference import ReferenceEvaluator

#: Short and long, a question, small talk: the short ones suffered most from the saturation.
TEXTS = ("Thanks!", "When is my Zumba class?", "I moved to Berlin last spring and I love my new flat.",
         "Can you help me write a cover letter for a marketing job at a bank? I have five years of experience.")


def _reference(path) -> ReferenceEvaluator:
    model = onnx.load(str(path))
    for opset in model.opset_import:
        # the model is opset 17; the evaluator implements DequantizeLinear from 19 on, the same for int8
        if opset.domain in ("", "ai.onnx"):
            opset.version = max(opset.version, 19)
    return ReferenceEvaluator(model)


def test_the_matrix_weights_are_stored_unsigned(embedder):
    model = onnx.load(str(embedder._onnx_path))
    weights = {t.name: t for t in model.graph.initializer}
    products = [n for n in model.graph.node if n.op_type == "MatMulInteger"]
    assert len(products) == 36  # six layers of six: query, key, value, attention output, two feed-forward
    for node in products:
        assert numpy_helper.to_array(weights[node.input[1]]).dtype == np.uint8, node.input[1]
        assert set(numpy_helper.to_array(weights[node.input[3]]).tolist()) == {128}, node.input[3]


def test_the_embedder_agrees_with_the_reference_evaluator(embedder):
    reference = _reference(embedder._onnx_path)
    ours = embedder.embed(list(TEXTS))
    tokenizer = embedder._tokenizer
    for text, vector in zip(TEXTS, ours):
        encoded = tokenizer.encode(text)
        ids = np.array([encoded.ids], dtype=np.int64)
        hidden = reference.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids),
                                      "token_type_ids": np.array([encoded.type_ids], dtype=np.int64)})[0][0]
        pooled = hidden.mean(axis=0)
        exact = pooled / np.linalg.norm(pooled)
        assert float(np.abs(vector - exact).max()) < 1e-5, (text, float(vector @ exact))
