"""The names ``treeattn induce`` takes for a pretrained model's distances, apart from the
code that computes them (``zero_shot_trees``) so that the command's options are built
without importing torch."""

METHODS = ("hidden", "attention", "perturbed")
HIDDEN_DISTANCE_NAMES = ("l2", "cosine")
ATTENTION_DISTANCE_NAMES = ("js", "hellinger")
