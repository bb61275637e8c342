"""The parser inside other libraries' pipelines.

``projection`` carries a parsed sentence (its tree and dependencies, over the parser's
words) onto another tokenization's tokens and answers questions about the constituents it
leaves there, without importing any other library; ``spacy`` is the spaCy pipeline
component ``treeattn_parser`` and the only module here that imports spaCy (the extra
``treeattn[spacy]``).
"""
