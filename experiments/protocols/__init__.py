"""Protocols built on sweeps: pre-registered studies (study/) and calibration ladders
(calibration/), and the rule that calibration seeds are never a study's (seeds)."""
