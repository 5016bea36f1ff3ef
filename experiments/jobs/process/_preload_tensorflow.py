"""Importing this module imports TensorFlow quietly
(:func:`experiments.base.process.quiet_tensorflow`).

It exists for the job process server (:mod:`experiments.jobs.process.isolation`), which can only
preload modules by name: listed first in a job's ``preload``, it makes the server's TensorFlow
import silent, so no job prints TensorFlow's C++ start-up lines.
"""

from experiments.base.process import quiet_tensorflow

quiet_tensorflow()
