"""Process settings shared by the commands that import TensorFlow."""

from __future__ import annotations

import os

__all__ = ["quiet_tensorflow"]


def quiet_tensorflow() -> None:
    """Silences TensorFlow's C++ start-up chatter (CUDA probing on a CPU machine, XLA lines).

    Call it before the first TensorFlow import; child processes (sweep jobs) inherit it. An explicit
    TF_CPP_MIN_LOG_LEVEL in the environment wins.
    """
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
