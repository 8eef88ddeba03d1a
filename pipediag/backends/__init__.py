"""The only places where heavy or optional third-party libraries are imported.

`tf` imports TensorFlow (and Keras), `nvml` imports pynvml. Everything else in pipediag gets them
from here, so the analysis, verdict, fixes and report code never pulls them in. JAX and PyTorch
are never imported by pipediag: the modules that use them (`steps.sync`, `steps.device_memory`,
`backends.memory_limit`) reach them through `sys.modules`, once the user's code has imported them.
"""
