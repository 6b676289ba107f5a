"""The token budget of one window: output reserve, protocol margin and six input slices.

Defaults are the 8k split: instruction 800, state 400, facts 1,200, knowledge 600, summaries
1,000, current episode 3,200, output reserve 800 and a protocol margin of 192 that absorbs the
difference between our count and the provider's (8,192 in total). The knowledge slice takes its
share from the summaries slice, the other material from outside the conversation; a window with
no relevant document cedes it forward, so recall gets it back. ``Budget.for_window`` scales that
split to any window; explicit values win over the scaled ones.

A window whose model may call actions also keeps ``tool_results`` tokens for what the calls
return: taken off the input before the slices share it, so the results of every round fit
beside the window the model was first sent (`context.tool_results` counts them in).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Final

__all__ = ["DEFAULT_WINDOW", "SLICE_NAMES", "Budget"]

DEFAULT_WINDOW: Final = 8192
SLICE_NAMES: Final = (
    "instruction",
    "state",
    "facts",
    "knowledge",
    "summaries",
    "current_episode",
)

_DEFAULT_SLICES: Final = {
    "instruction": 800,
    "state": 400,
    "facts": 1200,
    "knowledge": 600,
    "summaries": 1000,
    "current_episode": 3200,
}
_DEFAULT_RESERVE: Final = 800
_DEFAULT_MARGIN: Final = 192
_DEFAULT_MAX_SINGLE: Final = 1200
_DEFAULT_TRUNCATED_TARGET: Final = 700
_DEFAULT_MAX_INPUT_CHARS: Final = 50_000


@dataclass(frozen=True, slots=True)
class Budget:
    """Token budget of a window; validated on construction (``ValueError`` when inconsistent).

    ``max_single_message_tokens``: a message above it is cut to ``truncated_message_target_tokens``
    with a visible marker. ``max_input_chars``: hard character cap applied before counting.
    ``head_turns``: opening turns of the current episode kept when its middle is compressed.
    """

    window: int = DEFAULT_WINDOW
    output_reserve: int = _DEFAULT_RESERVE
    protocol_margin: int = _DEFAULT_MARGIN
    instruction: int = _DEFAULT_SLICES["instruction"]
    state: int = _DEFAULT_SLICES["state"]
    facts: int = _DEFAULT_SLICES["facts"]
    # Built field by field, a budget has a knowledge slice only when it names one (the
    # summaries keep their whole share); `default` and `for_window` give it its share.
    knowledge: int = 0
    summaries: int = _DEFAULT_SLICES["summaries"] + _DEFAULT_SLICES["knowledge"]
    current_episode: int = _DEFAULT_SLICES["current_episode"]
    max_single_message_tokens: int = _DEFAULT_MAX_SINGLE
    truncated_message_target_tokens: int = _DEFAULT_TRUNCATED_TARGET
    max_input_chars: int = _DEFAULT_MAX_INPUT_CHARS
    head_turns: int = 2
    tool_results: int = 0

    def __post_init__(self) -> None:
        for field in fields(self):
            value = getattr(self, field.name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"budget {field.name} must be a non-negative int, got {value!r}")
        if self.window == 0:
            raise ValueError("budget window must be positive")
        sliced = sum(budget for _, budget in self.slices)
        allocated = sliced + self.output_reserve + self.protocol_margin + self.tool_results
        if allocated > self.window:
            raise ValueError(
                f"budget slices ({sliced}) + output reserve "
                f"({self.output_reserve}) + protocol margin ({self.protocol_margin}) + tool "
                f"results ({self.tool_results}) = {allocated} exceed the window ({self.window})"
            )
        if self.truncated_message_target_tokens == 0:
            raise ValueError("truncated_message_target_tokens must be positive")
        if self.truncated_message_target_tokens >= self.max_single_message_tokens:
            raise ValueError(
                f"truncated_message_target_tokens ({self.truncated_message_target_tokens}) must be "
                f"below max_single_message_tokens ({self.max_single_message_tokens})"
            )
        if self.max_input_chars == 0:
            raise ValueError("max_input_chars must be positive")

    @property
    def input_budget(self) -> int:
        """Tokens the first input may use: the window minus output reserve, protocol margin
        and the room kept for tool results."""
        return self.window - self.output_reserve - self.protocol_margin - self.tool_results

    @property
    def slices(self) -> tuple[tuple[str, int], ...]:
        """``(name, budget)`` of each input slice, in fill order."""
        return tuple((name, self.slice_budget(name)) for name in SLICE_NAMES)

    def slice_budget(self, name: str) -> int:
        """Budget of the slice called ``name`` (one of ``SLICE_NAMES``)."""
        if name not in SLICE_NAMES:
            raise KeyError(name)
        value: int = getattr(self, name)
        return value

    @classmethod
    def default(cls) -> Budget:
        """The 8k budget from the defaults table."""
        return cls.for_window(DEFAULT_WINDOW)

    @classmethod
    def for_window(
        cls,
        window: int,
        *,
        output_reserve: int | None = None,
        protocol_margin: int | None = None,
        instruction: int | None = None,
        state: int | None = None,
        facts: int | None = None,
        knowledge: int | None = None,
        summaries: int | None = None,
        current_episode: int | None = None,
        max_single_message_tokens: int | None = None,
        truncated_message_target_tokens: int | None = None,
        max_input_chars: int | None = None,
        head_turns: int = 2,
        tool_results: int = 0,
    ) -> Budget:
        """Scale the 8k split to ``window``.

        Reserve, margin and per-message limits scale linearly with the window unless given. The
        slices share ``window - reserve - margin`` in the default proportions, after any slice
        given explicitly took its share; rounding leftovers go to the current episode.
        """
        if window <= 0:
            raise ValueError(f"budget window must be positive, got {window}")
        reserve = _scaled(_DEFAULT_RESERVE, window) if output_reserve is None else output_reserve
        margin = _scaled(_DEFAULT_MARGIN, window) if protocol_margin is None else protocol_margin
        explicit = {
            "instruction": instruction,
            "state": state,
            "facts": facts,
            "knowledge": knowledge,
            "summaries": summaries,
            "current_episode": current_episode,
        }
        slices = _share(window - reserve - margin - tool_results, explicit)
        max_single = (
            max(2, _scaled(_DEFAULT_MAX_SINGLE, window))
            if max_single_message_tokens is None
            else max_single_message_tokens
        )
        target = (
            max(1, min(_scaled(_DEFAULT_TRUNCATED_TARGET, window), max_single - 1))
            if truncated_message_target_tokens is None
            else truncated_message_target_tokens
        )
        chars = (
            max(_DEFAULT_MAX_INPUT_CHARS, _scaled(_DEFAULT_MAX_INPUT_CHARS, window))
            if max_input_chars is None
            else max_input_chars
        )
        return cls(
            window=window,
            output_reserve=reserve,
            protocol_margin=margin,
            max_single_message_tokens=max_single,
            truncated_message_target_tokens=target,
            max_input_chars=chars,
            head_turns=head_turns,
            tool_results=tool_results,
            **slices,
        )


def _scaled(default: int, window: int) -> int:
    return default * window // DEFAULT_WINDOW


def _share(available: int, explicit: dict[str, int | None]) -> dict[str, int]:
    if available < 0:
        raise ValueError(f"output reserve and protocol margin exceed the window by {-available}")
    fixed = {name: value for name, value in explicit.items() if value is not None}
    free = [name for name in SLICE_NAMES if name not in fixed]
    remaining = available - sum(fixed.values())
    if remaining < 0:
        raise ValueError(
            f"explicit slices ({sum(fixed.values())}) exceed the input budget ({available})"
        )
    weight = sum(_DEFAULT_SLICES[name] for name in free)
    shares = {name: remaining * _DEFAULT_SLICES[name] // weight for name in free} if weight else {}
    leftover = remaining - sum(shares.values())
    if leftover and free:
        # The current episode is the slice that most often needs a few more tokens.
        sink = "current_episode" if "current_episode" in shares else free[-1]
        shares[sink] += leftover
    return {name: fixed.get(name, shares.get(name, 0)) for name in SLICE_NAMES}
