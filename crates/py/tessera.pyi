"""tessera: a tensor-program optimizer and compiler for the CPU.

ONNX models run as inference sessions (``InferenceSession``, with ONNX
Runtime's habits), Tensor Comprehensions defs compile into functions
(``compile``), ``verify`` decides whether two defs compute the same
outputs, and ``optimize`` searches for a faster equivalent of a def. Arrays go in without copies (aligned, C-contiguous NumPy arrays;
DLPack tensors such as PyTorch CPU tensors) and come out as NumPy arrays
over tessera's own buffers.
"""

import os
from typing import Any, Callable, Mapping, Optional, Sequence, Union, overload

import numpy as np

__version__: str

class Error(Exception):
    """Every error tessera raises; its message is the located diagnostic the
    ``tessera`` command prints."""

class ParseError(Error):
    """TC source with errors (file, line and column), or a file that is not
    a valid ONNX model."""

class UnsupportedOperatorError(Error):
    """A valid ONNX model using an operator, operator domain or operator set
    version tessera does not implement."""

class InputError(Error):
    """An input or output that is unknown or missing, of the wrong element
    type, or not an array."""

class ShapeError(InputError):
    """An input whose rank or dimensions do not fit what the program
    declares, or sizes that do not bind."""

class RunError(Error):
    """The program failed while running (an index out of bounds, a division
    by zero), located at its statement or node."""

ArrayLike = Any
"""A NumPy array, an object with ``__dlpack__`` (a PyTorch CPU tensor), or
anything ``numpy.asarray`` takes (copied once)."""

class NodeArg:
    """One input or output of a model, as ONNX Runtime's ``NodeArg``."""

    @property
    def name(self) -> str:
        """The name in the model."""
    @property
    def type(self) -> str:
        """ONNX's type, as ONNX Runtime writes it: ``tensor(float)``."""
    @property
    def shape(self) -> Optional[list[Union[int, str, None]]]:
        """The dimensions: an int when fixed, the symbol's name when
        symbolic, ``None`` when unknown; ``None`` when the model gives no
        shape."""

class InferenceSession:
    """An ONNX model compiled for this machine, run like ONNX Runtime's
    ``InferenceSession``.

    ``path`` is the model file. ``sizes`` binds symbolic input dimensions by
    name (``{"batch": 1}``); a model whose input shapes are all known is
    compiled when the session is made, else once per set of input shapes,
    on first use. ``threads`` is the number of threads a run uses (default:
    all cores).

    For scripts written for ONNX Runtime, ``InferenceSession(path,
    sess_options, providers)`` works too: an ONNX Runtime
    ``SessionOptions`` (positional or ``sess_options=``) gives its
    ``intra_op_num_threads`` (0: all cores; its other settings are
    optimization switches tessera does not need); ``providers`` may only
    name ``CPUExecutionProvider``, and ``provider_options`` may only be
    empty.

    With ``optimize=True``, each set of input shapes runs the optimizer's
    result for the model's program (as ``optimize`` finds it: a search of
    ``budget`` seconds, default 10, or the result of an identical earlier
    search from the cache) instead of the program as imported; its outputs
    are the model's.

    Raises ``ParseError`` for a file that is not a valid model,
    ``UnsupportedOperatorError`` for an operator tessera lacks,
    ``InputError`` for a ``budget`` of 0 or one given without
    ``optimize=True``.
    """

    @overload
    def __init__(
        self,
        path: Union[str, os.PathLike[str]],
        sizes: Optional[Mapping[str, int]] = None,
        threads: Optional[int] = None,
        providers: Optional[Sequence[Any]] = None,
        sess_options: Any = None,
        provider_options: Optional[Sequence[Mapping[str, Any]]] = None,
        *,
        optimize: bool = False,
        budget: Optional[float] = None,
    ) -> None: ...
    @overload
    def __init__(
        self,
        path: Union[str, os.PathLike[str]],
        sess_options: Any,
        providers: Optional[Sequence[Any]] = None,
        *,
        sizes: Optional[Mapping[str, int]] = None,
        provider_options: Optional[Sequence[Mapping[str, Any]]] = None,
        optimize: bool = False,
        budget: Optional[float] = None,
    ) -> None: ...
    @property
    def threads(self) -> Optional[int]:
        """The threads a run uses; ``None`` for all cores."""
    def get_inputs(self) -> list[NodeArg]:
        """The model's inputs (its initializers left out), in its order."""
    def get_outputs(self) -> list[NodeArg]:
        """The model's outputs, in its order."""
    def get_providers(self) -> list[str]:
        """``["CPUExecutionProvider"]``."""
    @property
    def specializations(self) -> int:
        """How many sets of input shapes the model is compiled for."""
    def run(
        self,
        output_names: Optional[Sequence[str]],
        input_feed: Mapping[str, ArrayLike],
        run_options: None = None,
    ) -> list[np.ndarray]:
        """Runs the model on ``input_feed`` (input name to array) and returns
        the outputs named in ``output_names`` (all, in the model's order,
        when ``None``). The GIL is released while the model runs; several
        threads may run one session at once.

        Raises ``InputError`` for an unknown or missing input, an unknown
        output name or a wrong element type; ``ShapeError`` for a wrong rank
        or dimension.
        """

class Function:
    """A TC def compiled for this machine, specialized and cached per set of
    sizes. Call it with arrays by position or by parameter name."""

    def __call__(self, *args: Union[ArrayLike, float, int, bool], **kwargs: Union[ArrayLike, float, int, bool]) -> Union[np.ndarray, tuple[np.ndarray, ...]]:
        """Calls the def; returns its output, or a tuple when it has several.
        The GIL is released while it runs."""
    @property
    def entry(self) -> str:
        """The def's name."""
    @property
    def inputs(self) -> list[str]:
        """The def's parameters a call takes (those not declared constant),
        in order."""
    @property
    def outputs(self) -> list[str]:
        """The def's outputs, in order."""
    @property
    def specializations(self) -> int:
        """How many sets of sizes the def is compiled for."""

def compile(
    tc_source: Union[str, os.PathLike[str]],
    entry: Optional[str] = None,
    sizes: Optional[Mapping[str, int]] = None,
    threads: Optional[int] = None,
    constants: Optional[Mapping[str, Union[ArrayLike, float, int, bool]]] = None,
) -> Function:
    """Compiles def ``entry`` (the source's only def when ``None``) of TC
    source (text, or a path to a ``.tc`` file) into a callable. ``sizes``
    binds size symbols for every call; the others are read off the
    arguments' shapes. ``constants`` gives arguments (weights) that are the
    same on every call: they are copied now, calls leave them out, and what
    depends on them alone (packing them into a kernel's layout) runs once
    per set of sizes. Raises ``ParseError`` with the located diagnostics
    for source with errors, ``InputError`` for a constant the def does not
    take or that does not fit it."""

class Region:
    """A region of one output where two defs differ."""

    @property
    def output(self) -> str:
        """The output's name (in the first def)."""
    @property
    def ranges(self) -> list[tuple[int, int]]:
        """Per dimension, ``(start, stop)``."""
    @property
    def index(self) -> tuple[slice, ...]:
        """The region as a NumPy index."""

class Verdict:
    """The verdict of ``verify``; truthy when the defs are equivalent."""

    @property
    def equivalent(self) -> bool:
        """Whether every output agrees everywhere tested."""
    @property
    def regions(self) -> list[Region]:
        """Where the outputs differ (empty when equivalent)."""
    @property
    def method(self) -> str:
        """``"exact"`` (over Z_p), ``"float"`` (the defs are not
        polynomials: every element compared in floating point) or
        ``"sampled"`` (not polynomials and too large to interpret whole:
        compared at the corners and random points of every box)."""
    @property
    def error_bound(self) -> Optional[float]:
        """The probability that "equivalent" is wrong, when the test bounds
        it."""
    def __bool__(self) -> bool: ...

def verify(
    a_source: Union[str, os.PathLike[str]],
    b_source: Optional[Union[str, os.PathLike[str]]],
    entry: str,
    sizes: Optional[Mapping[str, int]] = None,
    entry_b: Optional[str] = None,
    trials: Optional[int] = None,
    seed: int = 0,
) -> Verdict:
    """Verifies def ``entry`` of ``a_source`` against def ``entry_b``
    (default: the same name) of ``b_source`` (``None``: ``a_source``
    again). ``sizes`` binds size symbols; ``trials`` random draws (default:
    enough for a false "equivalent" below 2^-60)."""

def input_copies() -> int:
    """How many input arrays tessera has copied since it was imported
    (arrays not C-contiguous or not aligned to 16 bytes, and objects that
    were not arrays)."""

class Optimized:
    """What ``optimize`` gave for a def; ``str()`` is the line ``tessera run
    --optimize`` prints."""

    @property
    def entry(self) -> str:
        """The def's name."""
    @property
    def program(self) -> str:
        """The optimized def as TC, after the defs it calls that the search
        generated, at the sizes it was searched for (``compile`` it with
        ``entry``); the original def's text when unchanged."""
    @property
    def changed(self) -> bool:
        """Whether the search found a faster equivalent."""
    @property
    def original_time(self) -> float:
        """The original's time in seconds, measured or estimated."""
    @property
    def time(self) -> float:
        """The result's time in seconds, measured or estimated."""
    @property
    def speedup(self) -> float:
        """``original_time / time``."""
    @property
    def measured(self) -> bool:
        """Whether the times are measured (else the analytic estimate)."""
    @property
    def steps(self) -> list[dict[str, Any]]:
        """The steps the result applies: dicts with ``rule``, ``at`` (where
        in the original), ``ops`` (a list of the operators it applies) and
        ``verdict`` (how it is proved)."""
    @property
    def proof(self) -> Optional[str]:
        """The verifier's verdict on the result, region by region (each
        part of the result that computes differently from the original,
        proved apart); ``None`` when unchanged."""
    @property
    def cached(self) -> bool:
        """Whether the result was read from the cache instead of searched."""
    @property
    def search_time(self) -> float:
        """The search's time in seconds (for a cached result, that of the
        search that found it)."""

def optimize(
    tc_source: Union[str, os.PathLike[str]],
    entry: Optional[str] = None,
    sizes: Optional[Mapping[str, int]] = None,
    budget: float = 10.0,
    top_k: int = 5,
    measure: bool = True,
    derive_depth: int = 4,
) -> Optimized:
    """Searches for a faster equivalent of def ``entry`` (the source's only
    def when ``None``) of TC source (text, or a path to a ``.tc`` file or an
    ``.onnx`` model) at ``sizes`` (every size symbol bound; for a model,
    its symbolic input dimensions): the proved rewrite rules, mutants and
    expression derivations (explored to ``derive_depth`` rule applications;
    0 leaves them out) searched for ``budget`` seconds, the ``top_k`` cheapest candidates by
    estimate measured (with ``measure=False``, decided by the estimate
    alone: nothing is compiled or timed), the fastest proved equal to the
    original. The result of an identical earlier search is read from the
    cache (``cached``). The GIL is released while it works. Raises
    ``InputError`` for a ``budget`` or ``top_k`` of 0 or a def the source
    lacks, ``ShapeError`` for a size without a value, ``ParseError`` for
    source with errors."""


class ImperativeFunction:
    """A PyTorch-style Python function (views, in-place updates, loops,
    branches) converted by TensorSSA's algorithm and compiled, once per set
    of argument shapes, element types and int/bool values. Call it like the
    function: tensors as NumPy arrays or PyTorch CPU tensors (results are
    then PyTorch tensors), ints and bools (specialized on), floats."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...
    @property
    def python(self) -> Callable[..., Any]:
        """The function as written, run by Python and PyTorch."""
    @property
    def specializations(self) -> int:
        """How many specializations are compiled."""
    def functionalize(self, *args: Any) -> str:
        """The converted program (TC with loop and branch regions) for
        these arguments, and the mutations the conversion removed."""

def function(f: Callable[..., Any], threads: Optional[int] = None) -> ImperativeFunction:
    """Decorates a PyTorch-style function (the subset of the README's
    "Imperative programs"): its source and that of the module-level
    functions it calls are read; a construct outside the subset raises
    ParseError, located, at the first call."""
