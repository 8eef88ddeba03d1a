"""Numbers from the raw timings and samples: rates, percentiles, utilisation, correlations.

Pure: plain dataclasses in, plain dataclasses out. No TensorFlow, no NVML, no judgement — the
verdict decides what the numbers mean.
"""
