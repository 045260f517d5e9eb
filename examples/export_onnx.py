"""Export Ember's small CNN to ONNX and run it in onnxruntime (no training needed).

    pip install -e '.[export]'
    python examples/export_onnx.py

The model is exported with a dynamic batch dimension, then run in onnxruntime on a batch of
another size and compared with Ember's own output.
"""

import argparse
import os
import tempfile

import numpy as np
import onnx
import onnxruntime as ort

import ember


def main() -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()  # (--help)
    ember.manual_seed(0)
    model = ember.models.cnn().eval()
    path = os.path.join(tempfile.mkdtemp(), "cnn.onnx")
    ember.onnx.export(model, ember.randn(1, 1, 28, 28), path, input_names=["image"],
                      output_names=["logits"], dynamic_axes={"image": {0: "batch"}})
    proto = onnx.load(path)
    onnx.checker.check_model(proto)
    print(f"wrote {path} ({os.path.getsize(path) / 1e6:.1f} MB, opset "
          f"{proto.opset_import[0].version}): "
          f"{', '.join(sorted({n.op_type for n in proto.graph.node}))}")

    images = ember.randn(8, 1, 28, 28)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    (logits,) = session.run(["logits"], {"image": images.numpy()})
    with ember.no_grad():
        expected = model(images).numpy()
    print(f"onnxruntime on a batch of {len(images)}: logits {logits.shape}, largest difference "
          f"from Ember {np.abs(logits - expected).max():.2e}")
    print("predicted classes:", logits.argmax(1).tolist())


if __name__ == "__main__":
    main()
