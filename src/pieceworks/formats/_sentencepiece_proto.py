"""SentencePiece's ``ModelProto`` and ``SentencePieceText`` message classes, built at import time.

The schema mirrors ``sentencepiece_model.proto`` (package ``sentencepiece``,
proto2): the same messages, field numbers, types and defaults, so a .model
file written by either library reads in the other. It is declared here as a
``FileDescriptorProto`` and turned into classes by the ``protobuf`` runtime;
no generated ``_pb2`` file and no hand-written wire parser.

``SentencePieceText`` (and ``NBestSentencePieceText``) mirror
``sentencepiece.proto``: an encoding or decoding with each piece's surface
and byte offsets, what ``encode(..., out_type="proto")`` returns.

The classes live in a private descriptor pool, so importing them next to
``sentencepiece``'s own ``sentencepiece_model_pb2`` (same full names) causes
no clash.

>>> m = ModelProto()
>>> p = m.pieces.add(); p.piece = "▁a"; p.score = -1.5
>>> m.trainer_spec.vocab_size, m.normalizer_spec.add_dummy_prefix
(8000, True)
>>> ModelProto.FromString(m.SerializeToString()).pieces[0].piece
'▁a'
"""

from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

__all__ = ["ModelProto", "TrainerSpec", "NormalizerSpec", "SelfTestData", "SentencePieceText",
           "NBestSentencePieceText", "PIECE_TYPES", "MODEL_TYPES", "FILE_DESCRIPTOR", "TEXT_FILE_DESCRIPTOR"]

_F = descriptor_pb2.FieldDescriptorProto
_OPT, _REP = _F.LABEL_OPTIONAL, _F.LABEL_REPEATED
_T = {"string": _F.TYPE_STRING, "bytes": _F.TYPE_BYTES, "bool": _F.TYPE_BOOL, "int32": _F.TYPE_INT32,
      "uint32": _F.TYPE_UINT32, "uint64": _F.TYPE_UINT64, "float": _F.TYPE_FLOAT, "enum": _F.TYPE_ENUM, "message": _F.TYPE_MESSAGE}

#: ModelProto.SentencePiece.Type, by name.
PIECE_TYPES = {"NORMAL": 1, "UNKNOWN": 2, "CONTROL": 3, "USER_DEFINED": 4, "UNUSED": 5, "BYTE": 6}
#: TrainerSpec.ModelType, by name.
MODEL_TYPES = {"UNIGRAM": 1, "BPE": 2, "WORD": 3, "CHAR": 4}

# (number, name, label, type, default or None, type_name for enums/messages, deprecated)
_TRAINER_SPEC = [
    (1, "input", _REP, "string", None, None, False),
    (7, "input_format", _OPT, "string", None, None, False),
    (2, "model_prefix", _OPT, "string", None, None, False),
    (3, "model_type", _OPT, "enum", "UNIGRAM", ".sentencepiece.TrainerSpec.ModelType", False),
    (4, "vocab_size", _OPT, "int32", "8000", None, False),
    (5, "accept_language", _REP, "string", None, None, True),
    (6, "self_test_sample_size", _OPT, "int32", "0", None, True),
    (50, "enable_differential_privacy", _OPT, "bool", "false", None, True),
    (51, "differential_privacy_noise_level", _OPT, "float", "0", None, True),
    (52, "differential_privacy_clipping_threshold", _OPT, "uint64", "0", None, True),
    (10, "character_coverage", _OPT, "float", "0.9995", None, False),
    (11, "input_sentence_size", _OPT, "uint64", "0", None, False),
    (19, "shuffle_input_sentence", _OPT, "bool", "true", None, False),
    (12, "mining_sentence_size", _OPT, "int32", None, None, True),
    (13, "training_sentence_size", _OPT, "int32", None, None, True),
    (14, "seed_sentencepiece_size", _OPT, "int32", "1000000", None, False),
    (15, "shrinking_factor", _OPT, "float", "0.75", None, False),
    (18, "max_sentence_length", _OPT, "int32", "4192", None, False),
    (16, "num_threads", _OPT, "int32", "16", None, False),
    (17, "num_sub_iterations", _OPT, "int32", "2", None, False),
    (20, "max_sentencepiece_length", _OPT, "int32", "16", None, False),
    (21, "split_by_unicode_script", _OPT, "bool", "true", None, False),
    (23, "split_by_number", _OPT, "bool", "true", None, False),
    (22, "split_by_whitespace", _OPT, "bool", "true", None, False),
    (24, "treat_whitespace_as_suffix", _OPT, "bool", "false", None, False),
    (26, "allow_whitespace_only_pieces", _OPT, "bool", "false", None, False),
    (25, "split_digits", _OPT, "bool", "false", None, False),
    (53, "pretokenization_delimiter", _OPT, "string", "", None, False),
    (30, "control_symbols", _REP, "string", None, None, False),
    (31, "user_defined_symbols", _REP, "string", None, None, False),
    (36, "required_chars", _OPT, "string", None, None, False),
    (35, "byte_fallback", _OPT, "bool", "false", None, False),
    (32, "vocabulary_output_piece_score", _OPT, "bool", "true", None, False),
    (33, "hard_vocab_limit", _OPT, "bool", "true", None, False),
    (34, "use_all_vocab", _OPT, "bool", "false", None, False),
    (40, "unk_id", _OPT, "int32", "0", None, False),
    (41, "bos_id", _OPT, "int32", "1", None, False),
    (42, "eos_id", _OPT, "int32", "2", None, False),
    (43, "pad_id", _OPT, "int32", "-1", None, False),
    (45, "unk_piece", _OPT, "string", "<unk>", None, False),
    (46, "bos_piece", _OPT, "string", "<s>", None, False),
    (47, "eos_piece", _OPT, "string", "</s>", None, False),
    (48, "pad_piece", _OPT, "string", "<pad>", None, False),
    (44, "unk_surface", _OPT, "string", " \u2047 ", None, False),
    (49, "train_extremely_large_corpus", _OPT, "bool", "false", None, True),
    (54, "seed_sentencepieces_file", _OPT, "string", "", None, False),
    (55, "auto_character_coverage", _OPT, "bool", "false", None, False),
]

_NORMALIZER_SPEC = [
    (1, "name", _OPT, "string", None, None, False),
    (2, "precompiled_charsmap", _OPT, "bytes", None, None, False),
    (3, "add_dummy_prefix", _OPT, "bool", "true", None, False),
    (4, "remove_extra_whitespaces", _OPT, "bool", "true", None, False),
    (5, "escape_whitespaces", _OPT, "bool", "true", None, False),
    (6, "normalization_rule_tsv", _OPT, "string", None, None, False),
]

_SAMPLE = [
    (1, "input", _OPT, "string", None, None, False),
    (2, "expected", _OPT, "string", None, None, False),
]

_SELF_TEST_DATA = [
    (1, "samples", _REP, "message", None, ".sentencepiece.SelfTestData.Sample", False),
]

_SENTENCE_PIECE = [
    (1, "piece", _OPT, "string", None, None, False),
    (2, "score", _OPT, "float", None, None, False),
    (3, "type", _OPT, "enum", "NORMAL", ".sentencepiece.ModelProto.SentencePiece.Type", False),
]

_MODEL_PROTO = [
    (1, "pieces", _REP, "message", None, ".sentencepiece.ModelProto.SentencePiece", False),
    (2, "trainer_spec", _OPT, "message", None, ".sentencepiece.TrainerSpec", False),
    (3, "normalizer_spec", _OPT, "message", None, ".sentencepiece.NormalizerSpec", False),
    (4, "self_test_data", _OPT, "message", None, ".sentencepiece.SelfTestData", False),
    (5, "denormalizer_spec", _OPT, "message", None, ".sentencepiece.NormalizerSpec", False),
]

# sentencepiece.proto: a text and its pieces; begin/end are UTF-8 byte offsets.
_TEXT_PIECE = [
    (1, "piece", _OPT, "string", None, None, False),
    (2, "id", _OPT, "uint32", None, None, False),
    (3, "surface", _OPT, "string", None, None, False),
    (4, "begin", _OPT, "uint32", None, None, False),
    (5, "end", _OPT, "uint32", None, None, False),
]

_SENTENCE_PIECE_TEXT = [
    (1, "text", _OPT, "string", None, None, False),
    (2, "pieces", _REP, "message", None, ".sentencepiece.SentencePieceText.SentencePiece", False),
    (3, "score", _OPT, "float", None, None, False),
]

_NBEST_SENTENCE_PIECE_TEXT = [
    (1, "nbests", _REP, "message", None, ".sentencepiece.SentencePieceText", False),
]

# Every message reserves 200..max for third-party extensions.
_EXTENSIONS = (200, 536870912)


def _add_fields(message: descriptor_pb2.DescriptorProto, fields: list) -> None:
    for number, name, label, kind, default, type_name, deprecated in fields:
        f = message.field.add(name=name, number=number, label=label, type=_T[kind], json_name=_camel(name))
        if default is not None:
            f.default_value = default
        if type_name is not None:
            f.type_name = type_name
        if deprecated:
            f.options.deprecated = True


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


def _add_enum(message: descriptor_pb2.DescriptorProto, name: str, values: dict) -> None:
    enum = message.enum_type.add(name=name)
    for value_name, number in values.items():
        enum.value.add(name=value_name, number=number)


def _message(file: descriptor_pb2.FileDescriptorProto, name: str, fields: list,
             parent: descriptor_pb2.DescriptorProto | None = None,
             extensions: bool = True) -> descriptor_pb2.DescriptorProto:
    message = (parent.nested_type if parent is not None else file.message_type).add(name=name)
    _add_fields(message, fields)
    if extensions:
        message.extension_range.add(start=_EXTENSIONS[0], end=_EXTENSIONS[1])
    return message


def build_file_descriptor() -> descriptor_pb2.FileDescriptorProto:
    """The ``sentencepiece_model.proto`` schema as a FileDescriptorProto."""
    file = descriptor_pb2.FileDescriptorProto(name="pieceworks/sentencepiece_model.proto",
                                              package="sentencepiece", syntax="proto2")
    file.options.optimize_for = descriptor_pb2.FileOptions.LITE_RUNTIME
    trainer = _message(file, "TrainerSpec", _TRAINER_SPEC)
    _add_enum(trainer, "ModelType", MODEL_TYPES)
    _message(file, "NormalizerSpec", _NORMALIZER_SPEC)
    self_test = _message(file, "SelfTestData", _SELF_TEST_DATA)
    sample = self_test.nested_type.add(name="Sample")
    _add_fields(sample, _SAMPLE)
    model = _message(file, "ModelProto", _MODEL_PROTO)
    piece = _message(file, "SentencePiece", _SENTENCE_PIECE, parent=model)
    # Declared in the .proto's order: NORMAL..USER_DEFINED, BYTE, UNUSED.
    _add_enum(piece, "Type", {k: PIECE_TYPES[k] for k in
                              ("NORMAL", "UNKNOWN", "CONTROL", "USER_DEFINED", "BYTE", "UNUSED")})
    return file


def build_text_file_descriptor() -> descriptor_pb2.FileDescriptorProto:
    """The ``sentencepiece.proto`` schema (SentencePieceText, NBestSentencePieceText)."""
    file = descriptor_pb2.FileDescriptorProto(name="pieceworks/sentencepiece.proto",
                                              package="sentencepiece", syntax="proto2")
    file.options.optimize_for = descriptor_pb2.FileOptions.LITE_RUNTIME
    text = _message(file, "SentencePieceText", _SENTENCE_PIECE_TEXT)
    _message(file, "SentencePiece", _TEXT_PIECE, parent=text)
    _message(file, "NBestSentencePieceText", _NBEST_SENTENCE_PIECE_TEXT, extensions=False)
    return file


FILE_DESCRIPTOR = build_file_descriptor()
TEXT_FILE_DESCRIPTOR = build_text_file_descriptor()
_POOL = descriptor_pool.DescriptorPool()
_FILE = _POOL.Add(FILE_DESCRIPTOR)
_TEXT_FILE = _POOL.Add(TEXT_FILE_DESCRIPTOR)


def _class(full_name: str):
    return message_factory.GetMessageClass(_POOL.FindMessageTypeByName(full_name))


ModelProto = _class("sentencepiece.ModelProto")
TrainerSpec = _class("sentencepiece.TrainerSpec")
NormalizerSpec = _class("sentencepiece.NormalizerSpec")
SelfTestData = _class("sentencepiece.SelfTestData")
SentencePieceText = _class("sentencepiece.SentencePieceText")
NBestSentencePieceText = _class("sentencepiece.NBestSentencePieceText")
