"""ge.onnx_plugin is not provided by libpyop: it parses no ONNX models.
Importing it fails with an ImportError naming it (docs/ge-plugins.md)."""

raise ImportError("ge.onnx_plugin: ONNX parser plugins need CANN GE; libpyop parses no ONNX "
                  "models and provides only ge.custom_op (docs/ge-plugins.md)",
                  name="ge.onnx_plugin")
