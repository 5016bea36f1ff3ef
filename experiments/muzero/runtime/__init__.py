"""Speed machinery of a run: nothing here changes a number, only when and how fast it is computed.

* :mod:`~experiments.muzero.runtime.compiled_call`: a traced function called with its flat
  tensors (``FlatCall``); the one use of TensorFlow's private ``ConcreteFunction._call_flat``,
  with its public fallback, and whether evaluations may plan on a copy of the weights;
* :mod:`~experiments.muzero.runtime.weights`: ``WeightCopy``, the networks' weights in variables
  of their own, which the same compiled search can read instead;
* :mod:`~experiments.muzero.runtime.batches`: ``Batches``, the next training batch prepared on a
  worker thread while the current step trains;
* :mod:`~experiments.muzero.runtime.deferred`: ``DeferredEvaluations``, a run's rows in order,
  their evaluations run beside training;
* :mod:`~experiments.muzero.runtime._worker`: the one worker thread behind the last two;
* :mod:`~experiments.muzero.runtime.graph_store`: ``GraphStore``, a traced train step and
  searches kept on disk beside the XLA cache and run by later processes without tracing them
  again.

Each is checked to give the same numbers as the plain path (``tests/muzero/test_compiled_call.py``,
``tests/muzero/test_batches.py``, ``tests/muzero/test_deferred.py``,
``tests/muzero/test_train.py``, ``tests/muzero/test_graph_store.py``). Nothing is
imported here, so importing the package stays cheap.

The face (``__all__``): :class:`FlatCall`, which benchmarks time, and :class:`GraphStore`, which
job hosts and benchmarks make; its names load at first use, each
from its module (PEP 562: :func:`experiments.base.faces.lazy_face`), so that importing the package
loads none of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from experiments.base.faces import lazy_face

if TYPE_CHECKING:
    from experiments.muzero.runtime.compiled_call import FlatCall
    from experiments.muzero.runtime.graph_store import GraphStore

__all__ = [
    "FlatCall",
    "GraphStore",
]

__getattr__, __dir__ = lazy_face(
    __name__,
    {
        "compiled_call": ("FlatCall",),
        "graph_store": ("GraphStore",),
    },
    __all__,
)
