"""`pipediag.keras.InputMonitor`: the Keras callback (see `pipediag.callbacks.keras`).

Importing this module imports TensorFlow and Keras.
"""

from pipediag.callbacks.keras import InputMonitor, unsupported_reason

__all__ = ["InputMonitor", "unsupported_reason"]
