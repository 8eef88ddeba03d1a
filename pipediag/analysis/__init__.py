"""Pure numbers from timings and samples (rates, intervals, utilisation, capacity): records in, plain dataclasses out,
no TensorFlow, no NVML, no judgement.
"""
