"""Protocols built on sweeps: pre-registered studies (study/) and calibration ladders
(calibration/), and the rule that calibration seeds are never a study's (seeds).

Its faces are its subpackages' (``experiments.protocols.study``,
``experiments.protocols.calibration``): the package itself exports nothing.
"""

__all__: list[str] = []
