"""Trees: constituency and dependency trees, conversions and treebank readers."""

from treeattn.trees.dependency import (
    DependencyTree,
    format_conllu,
    parse_conllu,
    read_conllu,
    write_conllu,
)
from treeattn.trees.distance import syntactic_distances, tree_from_distances
from treeattn.trees.head_rules import COLLINS_HEAD_RULES, find_head_child, to_dependency
from treeattn.trees.labels import EMPTY_ELEMENT, PUNCTUATION_TAGS, strip_label
from treeattn.trees.pretty import format_tree
from treeattn.trees.tokenize import Token, tokenize_with_offsets  # tokenize: the module's name
from treeattn.trees.transforms import (
    BINARY_MARKER,
    binarize,
    clean_ptb,
    collapse_unary,
    prune,
    remove_empty_elements,
    remove_punctuation,
    strip_function_tags,
    unbinarize,
    unwrap_root,
)
from treeattn.trees.tree import Tree, fold_tree, iter_parse, iter_parse_with_positions
from treeattn.trees.treebank import (
    TreebankEntry,
    detect_one_per_line,
    iter_treebank,
    read_treebank,
    read_treebank_entries,
    write_treebank,
)

__all__ = [
    "COLLINS_HEAD_RULES",
    "DependencyTree",
    "find_head_child",
    "format_conllu",
    "parse_conllu",
    "read_conllu",
    "to_dependency",
    "write_conllu",
    "BINARY_MARKER",
    "EMPTY_ELEMENT",
    "PUNCTUATION_TAGS",
    "Tree",
    "Token",
    "TreebankEntry",
    "binarize",
    "clean_ptb",
    "collapse_unary",
    "detect_one_per_line",
    "fold_tree",
    "format_tree",
    "iter_parse",
    "iter_parse_with_positions",
    "iter_treebank",
    "prune",
    "read_treebank",
    "read_treebank_entries",
    "remove_empty_elements",
    "remove_punctuation",
    "strip_function_tags",
    "strip_label",
    "syntactic_distances",
    "tokenize_with_offsets",
    "tree_from_distances",
    "unbinarize",
    "unwrap_root",
    "write_treebank",
]
