"""Evidence packs: `biasaudit pack` bundles a finished run (or suite) with everything an
outside reviewer needs to check it (report, spec, data, model identity, environment,
responses and codes, digests, an optional Ed25519 signature, a regulatory crosswalk), and
`biasaudit verify` checks a pack: every digest, the signature, and the estimates and
verdicts re-computed from the packed responses with no model call."""
