"""Chain-of-Skills: a multi-expert retriever whose skills are chained per task (Ma et al., *Chain-of-Skills: A
Configurable Model for Open-Domain Question Answering*, ACL 2023). See README.md here."""

from sleuth.plugins import System

SYSTEM = System(name="cos", title="Chain-of-Skills: A Configurable Model for Open-Domain Question Answering "
                "(ACL 2023)", package=__name__)
