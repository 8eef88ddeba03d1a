"""Running the modes (synthetic, pipeline, input_only, tuned): the runner, feeds, warm-up, watchdog, handover,
waterfall, compare rounds, scale's service feed and distributed feeds.
"""
