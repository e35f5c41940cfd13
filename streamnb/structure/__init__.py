"""Structure learning as pure functions over pair counts: information, spanning trees, Chow-Liu, TAN."""

from streamnb.structure.chow_liu import chow_liu, class_chow_liu, tan
from streamnb.structure.counted import top_features
from streamnb.structure.forest import Structure, tree_structure
from streamnb.structure.information import (
    class_mutual_information,
    conditional_mutual_information,
    mutual_information,
)
from streamnb.structure.spanning_tree import maximum_spanning_tree, orient

__all__ = [
    "Structure",
    "chow_liu",
    "class_chow_liu",
    "class_mutual_information",
    "conditional_mutual_information",
    "maximum_spanning_tree",
    "mutual_information",
    "orient",
    "tan",
    "top_features",
    "tree_structure",
]
