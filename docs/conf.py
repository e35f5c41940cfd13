"""Sphinx configuration of the streamnb documentation site.

Build it strictly (every warning an error), as the tests do:

    python -m sphinx -W --keep-going -b html docs docs/_build/html
"""

import os
import sys

# the checkout's package, not an installed copy
sys.path.insert(0, os.path.abspath(".."))

project = "streamnb"
author = "the streamnb developers"
copyright = "the streamnb developers"

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",  # the docstrings' numpydoc sections (Parameters, Returns, Notes)
    "myst_parser",  # the Markdown pages
]

source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build"]

myst_heading_anchors = 3  # links such as operations.md#resets
myst_enable_extensions = ["deflist"]

autodoc_member_order = "bysource"
autodoc_typehints = "description"
# the learners' methods come from streamnb's base classes (learn_one, merge, decay, ...): shown on
# each class; River's and Python's own members are not repeated
autodoc_default_options = {
    "members": True,
    "show-inheritance": True,
    "inherited-members": "MiniBatchClassifier,Classifier,Wrapper,Transformer,BaseTransformer,Estimator,Base,"
    "ABC,Generic,ValueError,Exception,BaseException,object",
}
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False

html_theme = "furo"
html_title = "streamnb"
