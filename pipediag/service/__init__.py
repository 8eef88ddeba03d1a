"""tf.data service servers: starting, watching and stopping local dispatchers and workers (`cluster`), and the program
each one runs (`server`, `python -m pipediag.service.server`).
"""
