"""The training step under test: a Keras model's train step, a user's step (any framework), or a
stand-in; how to wait for its work, recognise its out-of-memory errors, and read its device memory."""
