"""The training step under test: a Keras model's train step, a user's step, or a stand-in."""
