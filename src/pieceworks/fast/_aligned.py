"""A text normalized part by part, and what maps offsets in the result back into it.

The fast plans encode a normalized text in one kernel call and move the
tokens' offsets back into the input in C (``raw_encoding.remap_offsets``),
where the general path carries an alignment per char through every stage.
Only the parts a normalizer changes are mapped char by char; the stretches
between them only move. :class:`AlignedForm` normalizes with a Unicode form
(:class:`AlignedNfc` with NFC: the gaps between added tokens, each on its
own, as Hugging Face does);
:func:`aligned_precompiled` with a SentencePiece charsmap, cluster by cluster.
"""

from __future__ import annotations

from array import array
from functools import partial

from .._kernels.aligned_nfc import splice_clusters, splice_segments
from .._kernels.raw_encoding import remap_offsets, remap_spans
from .._unicode_forms import _EDIT_OF, form_tables, segment_edits, segment_kinds, span_pairs

__all__ = ["AlignedText", "AlignedForm", "AlignedNfc", "aligned_precompiled", "nfc_aligned", "remap_spans"]


def nfc_aligned(text: str) -> tuple[str, bytes]:
    """NFC of the whole of ``text`` in C, and each of its chars' span in ``text`` (int32 pairs, as
    ``raw_encoding.remap_spans`` takes them): for a text normalized whole, where
    :class:`AlignedNfc` would build its parts and arrays in Python.

    >>> made, spans = nfc_aligned("cafe\u0301")
    >>> made, array("i", spans).tolist()[-2:]     # (the é stands for the e: Hugging Face's alignment)
    ('café', [3, 4])
    """
    return form_tables("NFC").aligned(text)


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

    The grapheme clusters holding a char some rule begins with are each
    replaced through ``Precompiled.changes``, the normalizer's own edit
    list, on the cluster alone; the clusters are found, and the edits
    spliced, in C (``aligned_nfc.splice_clusters``), and each cluster's
    edit is kept. None when the charsmap has a rule C cannot place
    (``Precompiled.cluster_table``), or a deletion has no char before it to
    be charged to (Hugging Face then aligns every later char one place
    early).

    >>> from pieceworks.normalizers import Precompiled     # doctest: +SKIP
    >>> aligned_precompiled(Precompiled(charsmap), "a\\nﬁx").text    # doctest: +SKIP
    'a fix'
    """
    table, edits = precompiled.cluster_table()
    if table is None:
        return None
    view = AlignedText(text)
    view.length = splice_clusters(text, 0, len(text), table, edits, partial(_cluster_edit, precompiled, edits),
                                  view._parts, view._seg_starts, view._seg_shift, view._seg_map, view._map_starts,
                                  view._map_ends, 0)
    return view if view.length >= 0 else None


#: Cluster edits kept per charsmap before the dict starts over (a cluster of each script's letters
#: and marks: a few thousand in the UDHR's 500 languages).
_MAX_CLUSTER_EDITS = 1 << 16


def _cluster_edit(precompiled, edits: dict, cluster: str) -> "tuple[str, bytes, bool, bool] | None":
    """``splice_clusters``' entry for ``cluster`` (kept in ``edits``): None if the charsmap leaves it,
    else ``(replacement, map, charged, inserts_last)``.

    ``charged``: its first chars are deleted before it makes any, which
    the normalizer charges to the char before it; its map starts past them.
    ``inserts_last``: its last char is an insertion.

    >>> from pieceworks.normalizers import Precompiled
    >>> _cluster_edit(Precompiled(b""), {}, "a") is None
    True
    """
    changes = precompiled.changes(cluster)
    made = "".join([ch for ch, _ in changes])
    if made == cluster and not any(change for _, change in changes):
        entry = None
    else:
        charged = len(cluster) - _consumed(changes)
        pairs = span_pairs(changes)
        if charged:
            pairs = array("i", [at + charged for at in pairs])
        entry = (made, pairs.tobytes(), charged > 0, bool(changes) and changes[-1][1] > 0)
    if len(edits) >= _MAX_CLUSTER_EDITS:
        edits.clear()
    edits[cluster] = entry
    return entry


def _consumed(changes: list) -> int:
    """How many original chars ``(char, change)`` pairs stand for."""
    return sum(1 - change if change <= 0 else 0 for _, change in changes)
