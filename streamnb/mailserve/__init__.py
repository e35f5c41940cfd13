"""The long-running mail filter daemon (``streamnb mail serve``): milter and HTTP listeners."""
