"""The training step under test (a Keras model, a user's step in any framework, or a stand-in), how to wait for its
work, split it over replicas, and read its memory.
"""
