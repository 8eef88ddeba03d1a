"""tf.data service servers: starting, watching and stopping local dispatcher and worker processes.

`cluster` runs in pipediag's own process and never imports TensorFlow; `server` is the program
each server process runs (`python -m pipediag.service.server`).
"""
