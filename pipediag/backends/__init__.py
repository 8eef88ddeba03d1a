"""The only places where heavy or optional third-party libraries are imported.

`tf` imports TensorFlow (and Keras), `nvml` imports pynvml. Everything else in pipediag gets them
from here, so the analysis, verdict, fixes and report code never pulls them in.
"""
