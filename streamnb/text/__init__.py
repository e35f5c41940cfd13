"""Text features for streaming classifiers: SMS-like texts and raw e-mail to token counts."""

from streamnb.text.degenerate import degenerates
from streamnb.text.mail import Mail, parse
from streamnb.text.tokenizer import DEFAULT_HEADERS, Tokenizer
from streamnb.text.plaintext import tokens

__all__ = ["DEFAULT_HEADERS", "Mail", "Tokenizer", "degenerates", "parse", "tokens"]
