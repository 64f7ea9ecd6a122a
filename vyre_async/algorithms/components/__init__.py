"""Weakly connected components: four kernels and the code that runs them.

A run is ``cc_init``, then rounds of hooking and pointer jumping repeated as a
resident sequence until a round changes nothing (:func:`label_components`), with the
rounds and the convergence flag in a state block on the device (``STATE_*`` index
it). Each vertex ends labelled with the smallest vertex id of its component. The
algorithm is described in the ``_kernels`` module; the CUDA C is in this package's
``.cu`` files. :data:`COMPONENTS` is the ``components`` query kind, and
:func:`component_sizes` turns labels into each component's size.
"""

from ...kernels import register_builtin as _register_builtin
from .._registry import register as _register
from ._kernels import COMPONENTS_KERNELS as COMPONENTS_KERNELS
from ._kernels import cc_check as cc_check
from ._kernels import cc_hook as cc_hook
from ._kernels import cc_init as cc_init
from ._kernels import cc_jump as cc_jump
from ._kind import COMPONENTS as COMPONENTS
from ._kind import ComponentsParams as ComponentsParams
from ._layout import COMPONENTS_STATE_WORDS as COMPONENTS_STATE_WORDS
from ._layout import STATE_CHANGED as STATE_CHANGED
from ._layout import STATE_DONE as STATE_DONE
from ._layout import STATE_ROUNDS as STATE_ROUNDS
from ._run import JUMPS_PER_ROUND as JUMPS_PER_ROUND
from ._run import ComponentsScratch as ComponentsScratch
from ._run import allocate_scratch as allocate_scratch
from ._run import label_components as label_components
from ._run import round_steps as round_steps
from ._sizes import ComponentSizes as ComponentSizes
from ._sizes import component_sizes as component_sizes

_register_builtin(*COMPONENTS_KERNELS)
_register(COMPONENTS)

__all__ = [
    "COMPONENTS",
    "COMPONENTS_KERNELS",
    "COMPONENTS_STATE_WORDS",
    "ComponentSizes",
    "ComponentsParams",
    "ComponentsScratch",
    "JUMPS_PER_ROUND",
    "STATE_CHANGED",
    "STATE_DONE",
    "STATE_ROUNDS",
    "allocate_scratch",
    "cc_check",
    "cc_hook",
    "cc_init",
    "cc_jump",
    "component_sizes",
    "label_components",
    "round_steps",
]
