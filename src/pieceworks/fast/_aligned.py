"""A text normalized part by part, and what maps offsets in the result back into it.

The fast plans encode a normalized text in one kernel call and move the
tokens' offsets back into the input in C (``raw_encoding.remap_offsets``),
where the general path carries an alignment per char through every stage.
Only the parts a normalizer changes are mapped char by char; the stretches
between them only move. :class:`AlignedForm` normalizes with a Unicode form
(:class:`AlignedNfc` with NFC: the gaps between added tokens, each on its
own, as Hugging Face does);
:func:`aligned_precompiled` with a SentencePiece charsmap, word by word.
"""

from __future__ import annotations

from array import array

import regex

from .._kernels.aligned_nfc import splice_segments
from .._kernels.raw_encoding import remap_offsets
from .._unicode_forms import _EDIT_OF, segment_edits, segment_kinds, span_pairs

__all__ = ["AlignedText", "AlignedForm", "AlignedNfc", "aligned_precompiled"]


class AlignedText:
    """A text made from ``source`` part by part: parts kept as they are, and parts replaced through
    a normalizer's edit list; and what maps offsets in the result back into ``source``.

    :meth:`keep` appends a part as it is, :meth:`replace` a part's
    replacement, given as ``(char, change)`` pairs as
    :meth:`NormalizedString.transform_range` takes them; :attr:`text` is
    what they made, and :meth:`remap` moves a raw encoding's offsets from
    ``text`` into ``source``. Each char of a replacement spans the
    original chars ``transform_range`` gives it: a char that stands for
    several, its first one (Hugging Face's alignment: the é of e + U+0301
    spans the e); an inserted char (``change`` 1, never a part's first) the
    one before it.

    >>> from .._kernels.raw_encoding import offset_list, pack
    >>> view = AlignedText("<s>e\u0301!")
    >>> view.keep(0, 3), view.replace(3, 5, [("\xe9", -1)]), view.keep(5, 6), view.text
    ('<s>', '\xe9', '!', '<s>\xe9!')
    >>> offset_list(view.remap(pack([1, 2, 3], [0, 3, 4], [3, 4, 5], [0, 1, 2]), 3), 3, 0)
    [(0, 3), (3, 4), (5, 6)]
    """

    def __init__(self, source: str):
        self.source = source
        self.length = 0                 # chars made so far
        self._parts: list[str] = []
        self._seg_starts, self._seg_shift, self._seg_map = array("q"), array("q"), array("q")
        self._map_starts, self._map_ends = array("i"), array("i")

    @property
    def text(self) -> str:
        """The text made so far."""
        return "".join(self._parts)

    def keep(self, start: int, end: int) -> str:
        """Append ``source[start:end]`` as it is; that text."""
        if end <= start:
            return ""
        self._seg_starts.append(self.length)
        self._seg_shift.append(start - self.length)
        self._seg_map.append(-1)
        part = self.source[start:end]
        self._parts.append(part)
        self.length += end - start
        return part

    def replace(self, start: int, end: int, changes: list) -> str:
        """Append what ``changes`` (``(char, change)`` pairs) make of ``source[start:end]``; that text."""
        self._seg_starts.append(self.length)
        self._seg_shift.append(start)       # the segment's map is relative to its start
        self._seg_map.append(len(self._map_starts))
        pairs = span_pairs(changes)
        self._map_starts.extend(pairs[0::2])
        self._map_ends.extend(pairs[1::2])
        part = "".join([ch for ch, _ in changes])
        self._parts.append(part)
        self.length += len(changes)
        return part

    def remap(self, raw: bytes, n: int) -> bytes:
        """``raw`` (``n`` tokens, offsets into :attr:`text`) with its offsets into ``source``."""
        if not self._seg_starts:    # nothing made: no offsets to move
            return raw
        return remap_offsets(raw, n, self._seg_starts, self._seg_shift, self._seg_map, self._map_starts,
                             self._map_ends)


class AlignedForm(AlignedText):
    """:class:`AlignedText` whose :meth:`normalize` appends a Unicode normal form (``form``: "NFC",
    "NFKC", "NFD" or "NFKD") of a part, normalized on its own.

    Only the segments the form changes (a char and the marks it composes
    with: ``_unicode_forms.changed_segments``) are replaced; the rest is
    kept. The segments are found and spliced in C (``_kernels/aligned_nfc``).

    >>> view = AlignedForm("<s>ﬁe\u0301!", "NFKC")
    >>> view.keep(0, 3), view.normalize(3, 7), view.text
    ('<s>', 'fi\xe9!', '<s>fi\xe9!')
    """

    def __init__(self, source: str, form: str):
        super().__init__(source)
        self.form = form

    def normalize(self, start: int, end: int) -> str:
        """Append the form of ``source[start:end]``, normalized on its own; that text."""
        made, form = len(self._parts), self.form
        self.length = splice_segments(self.source, start, end, segment_kinds(form), segment_edits(form),
                                      _EDIT_OF[form], self._parts, self._seg_starts, self._seg_shift, self._seg_map,
                                      self._map_starts, self._map_ends, self.length)
        return "".join(self._parts[made:])


class AlignedNfc(AlignedForm):
    """:class:`AlignedForm` for NFC.

    >>> view = AlignedNfc("<s>e\u0301!")
    >>> view.keep(0, 3), view.normalize(3, 6), view.text
    ('<s>', '\xe9!', '<s>\xe9!')
    """

    def __init__(self, source: str):
        super().__init__(source, "NFC")


def aligned_precompiled(precompiled, text: str) -> "AlignedText | None":
    """``text`` through a SentencePiece charsmap (:class:`~pieceworks.normalizers.Precompiled`), aligned;
    or None for the general path.

    Word by word: a grapheme cluster never spans a line feed, nor a space
    but after a Prepend char, so such a stretch normalizes alone. A
    stretch that no rule matches in once the control chars the charsmap
    swaps one for one (``Precompiled.control_swaps``: the newline it makes
    a space; not in a text with a CR, as CR LF is one cluster) are swapped
    is kept so swapped, as the fast plans take whole texts; any other is
    replaced through ``Precompiled.changes``, the normalizer's own edit
    list, on the stretch as it came. None when such a stretch's first
    cluster is deleted: Hugging Face then charges the deletion to the char
    before, which this cut does not see, or, at the text's start, to
    nothing, so every later char aligns one place early.

    >>> from pieceworks.normalizers import Precompiled     # doctest: +SKIP
    >>> aligned_precompiled(Precompiled(charsmap), "a\\nﬁx").text    # doctest: +SKIP
    'a fix'
    """
    checker = precompiled.rule_checker()
    if checker is None:
        return None
    swapped = precompiled.swap_controls(text)
    view = AlignedText(swapped)
    leaves = checker.leaves
    kept = 0        # where the stretch to keep as it is began
    line_start = 0
    while line_start < len(text):
        line_end = text.find("\n", line_start) + 1 or len(text)
        if not leaves(swapped[line_start:line_end]):
            # Word by word within the line: only the words a rule matches in are replaced.
            line = text[line_start:line_end]
            cuts = [m.start() for m in _CLUSTER_AT_SPACE.finditer(line) if m.start()] + [len(line)]
            start = 0
            for end in cuts:
                if not leaves(swapped[line_start + start:line_start + end]):
                    changes = precompiled.changes(line[start:end])     # (the word as it came: see the doc)
                    if _consumed(changes) != end - start:
                        return None     # (a deletion the word before carries, or, at the start, none: see the doc)
                    view.keep(kept, line_start + start)
                    view.replace(line_start + start, line_start + end, changes)
                    kept = line_start + end
                start = end
        line_start = line_end
    view.keep(kept, len(text))
    return view


# A space starts a grapheme cluster unless a Prepend char comes before it (rule GB9b).
_CLUSTER_AT_SPACE = regex.compile(r"(?<!\p{Grapheme_Cluster_Break=Prepend}) ")


def _consumed(changes: list) -> int:
    """How many original chars ``(char, change)`` pairs stand for."""
    return sum(1 - change if change <= 0 else 0 for _, change in changes)
