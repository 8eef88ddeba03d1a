"""The only modules that import heavy or optional libraries: TensorFlow and Keras (`tf`), pynvml (`nvml`, and the
scripted `fake_nvml`), tfds, and the device-memory cap.

JAX and PyTorch are never imported by pipediag: the modules that use them (`steps.sync`,
`steps.device_memory`, `backends.memory_limit`) reach them through `sys.modules`, once the user's
code has imported them.
"""

# Set by the command's own process (cli.main, argv None), never by a caller's: the objects that
# importing TensorFlow created are then moved into the collector's permanent generation
# (gc.freeze), so its full collections during a diagnosis stop walking them. With TensorFlow
# imported a full collection took 0.25 s, and a diagnosis of scenarios/jpeg_tfrecord_serial made six
# of them, at moments nothing chose, inside timed windows or not (the 2-core development machine,
# 2026-12-04). A process of the user's own (InputMonitor in their fit) keeps its collector as it is.
freeze_imported_objects = False
