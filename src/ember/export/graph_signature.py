"""The graph signature of an exported program, as ``torch.export.graph_signature``: what each
placeholder of the graph is (a parameter, a buffer, a lifted constant, a user input) and what
each output is (a user output, a buffer's new value)."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from ember.errors import ArgumentError

__all__ = ["ConstantArgument", "ExportGraphSignature", "InputKind", "InputSpec", "OutputKind",
           "OutputSpec", "TensorArgument"]


class InputKind(enum.Enum):
    """What a placeholder of an exported graph holds (torch's values; Ember makes these
    four)."""

    USER_INPUT = 1
    PARAMETER = 2
    BUFFER = 3
    CONSTANT_TENSOR = 4


class OutputKind(enum.Enum):
    """What an output of an exported graph is (torch's values; Ember makes these two)."""

    USER_OUTPUT = 1
    BUFFER_MUTATION = 3


@dataclass(frozen=True)
class TensorArgument:
    """A tensor value of the graph, by its node's name."""

    name: str


@dataclass(frozen=True)
class ConstantArgument:
    """A value that is no tensor (an ``int`` output, say), fixed at export."""

    name: str
    value: Any


@dataclass
class InputSpec:
    """One placeholder: its ``kind``, its ``arg`` and, but for user inputs, its ``target``
    (the state-dict key ``"fc1.weight"``); buffers say whether they are ``persistent``.

    Example:
        >>> InputSpec(InputKind.PARAMETER, TensorArgument("p_weight"), "weight")
        InputSpec(kind=<InputKind.PARAMETER: 2>, arg=TensorArgument(name='p_weight'), target='weight', persistent=None)
    """  # noqa: E501

    kind: InputKind
    arg: TensorArgument | ConstantArgument
    target: str | None
    persistent: bool | None = None

    def __post_init__(self) -> None:
        if self.kind is InputKind.BUFFER and self.persistent is None:
            raise ArgumentError("InputSpec: a BUFFER says whether it is persistent")

    def __str__(self) -> str:
        target = "" if self.target is None else f" target='{self.target}'"
        persistent = "" if self.persistent is None else f" persistent={self.persistent}"
        return f"{self.arg.name}: {self.kind.name}{target}{persistent}"


@dataclass
class OutputSpec:
    """One output: its ``kind``, its ``arg`` and, for a buffer mutation, the buffer's key."""

    kind: OutputKind
    arg: TensorArgument | ConstantArgument
    target: str | None

    def __str__(self) -> str:
        target = "" if self.target is None else f" target='{self.target}'"
        return f"{self.arg.name}: {self.kind.name}{target}"


@dataclass
class ExportGraphSignature:
    """The specs of an exported graph's placeholders (in order) and outputs (in order: the
    buffers' new values first, then the user's outputs).

    Example:
        >>> ep = ember.export.export(ember.nn.Linear(4, 2), (ember.randn(3, 4),))
        >>> print(ep.graph_signature)
        <BLANKLINE>
        # inputs
        p_weight: PARAMETER target='weight'
        p_bias: PARAMETER target='bias'
        input_1: USER_INPUT
        <BLANKLINE>
        # outputs
        add: USER_OUTPUT
        <BLANKLINE>
    """

    input_specs: list[InputSpec]
    output_specs: list[OutputSpec]

    def _inputs(self, kind: InputKind) -> tuple[str, ...]:
        return tuple(s.target for s in self.input_specs if s.kind is kind)

    @property
    def parameters(self) -> tuple[str, ...]:
        """The state-dict keys of the parameters, in placeholder order."""
        return self._inputs(InputKind.PARAMETER)

    @property
    def buffers(self) -> tuple[str, ...]:
        """The keys of the buffers (persistent or not), in placeholder order."""
        return self._inputs(InputKind.BUFFER)

    @property
    def non_persistent_buffers(self) -> tuple[str, ...]:
        return tuple(s.target for s in self.input_specs
                     if s.kind is InputKind.BUFFER and not s.persistent)

    @property
    def lifted_tensor_constants(self) -> tuple[str, ...]:
        return self._inputs(InputKind.CONSTANT_TENSOR)

    @property
    def user_inputs(self) -> tuple[str, ...]:
        """The placeholder names of the user's inputs."""
        return tuple(s.arg.name for s in self.input_specs if s.kind is InputKind.USER_INPUT)

    @property
    def user_outputs(self) -> tuple[Any, ...]:
        """The output names of the user's outputs (a constant output by its value)."""
        return tuple(s.arg.value if isinstance(s.arg, ConstantArgument) else s.arg.name
                     for s in self.output_specs if s.kind is OutputKind.USER_OUTPUT)

    def _inputs_to(self, kind: InputKind) -> dict[str, str]:
        return {s.arg.name: s.target for s in self.input_specs if s.kind is kind}

    @property
    def inputs_to_parameters(self) -> dict[str, str]:
        return self._inputs_to(InputKind.PARAMETER)

    @property
    def inputs_to_buffers(self) -> dict[str, str]:
        return self._inputs_to(InputKind.BUFFER)

    @property
    def inputs_to_lifted_tensor_constants(self) -> dict[str, str]:
        return self._inputs_to(InputKind.CONSTANT_TENSOR)

    @property
    def buffers_to_mutate(self) -> dict[str, str]:
        """Output name -> the key of the buffer it is the new value of."""
        return {s.arg.name: s.target for s in self.output_specs
                if s.kind is OutputKind.BUFFER_MUTATION}

    # what torch's signature also lists, and Ember's programs never hold: inputs or
    # parameters written in place (refused at export), custom objects, effect tokens
    user_inputs_to_mutate = parameters_to_mutate = inputs_to_lifted_custom_objs = \
        property(lambda self: {}, doc="Always empty in Ember (torch's field, for its users).")
    lifted_custom_objs = input_tokens = output_tokens = \
        property(lambda self: (), doc="Always empty in Ember (torch's field, for its users).")
    backward_signature = assertion_dep_token = \
        property(lambda self: None, doc="Always None in Ember (torch's field, for its users).")

    def replace_all_uses(self, old: str, new: str) -> None:
        """Renames the value ``old`` to ``new`` in every spec (after a pass renamed its node).

        Example:
            >>> ep = ember.export.export(ember.nn.ReLU(), (ember.randn(2),))
            >>> ep.graph_signature.replace_all_uses("relu", "out")
            >>> ep.graph_signature.user_outputs
            ('out',)
        """
        for spec in (*self.input_specs, *self.output_specs):
            if isinstance(spec.arg, TensorArgument) and spec.arg.name == old:
                spec.arg = TensorArgument(new)

    def __str__(self) -> str:
        inputs = "\n".join(str(s) for s in self.input_specs)
        outputs = "\n".join(str(s) for s in self.output_specs)
        return f"\n# inputs\n{inputs}\n\n# outputs\n{outputs}\n"
