"""biasaudit: declarative audits of language models for bias."""
__version__ = "0.1.0"
