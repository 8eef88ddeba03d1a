"""The only modules that import heavy or optional libraries: TensorFlow and Keras (`tf`), pynvml (`nvml`, and the
scripted `fake_nvml`), tfds, and the device-memory cap.

JAX and PyTorch are never imported by pipediag: the modules that use them (`steps.sync`,
`steps.device_memory`, `backends.memory_limit`) reach them through `sys.modules`, once the user's
code has imported them.
"""
