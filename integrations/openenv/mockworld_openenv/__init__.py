"""Train against a mockworld world over OpenEnv: `rollout` plays tasks through OpenEnv's client."""
