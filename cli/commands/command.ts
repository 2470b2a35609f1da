/**
 * The options `mockworld` parses (cli/main.ts), as every command sees them. Flags with a default
 * are always set; the others are absent when not given.
 */
export interface CommandOptions {
  readonly json: boolean;
  readonly wait: boolean;
  readonly id?: string;
  readonly task?: string;
  readonly cells: boolean;
  readonly tasks: boolean;
  readonly metrics: boolean;
  readonly out?: string;
  readonly format: string;
  readonly config?: string;
  readonly collection?: string;
  readonly 'task-queue'?: string;
  readonly 'local-database': boolean;
  readonly port?: string;
  readonly host?: string;
  readonly origin?: string[];
  readonly mockworld?: string;
}

/** What a command runs with: the parsed command line and the output helpers every command shares. */
export interface CommandContext {
  readonly values: CommandOptions;
  /** The positional arguments after the command's name (`mockworld budget <id> <usd>`: id, usd). */
  readonly args: readonly string[];
  /** Prints the human text, or with --json the machine-readable value. */
  print(human: string, machine: unknown): void;
  /** The run's workflow id, the first argument; a UsageError naming the command when it is missing. */
  needId(): string;
}

/**
 * One `mockworld` subcommand. `run` resolves to the process's exit code; it throws a UsageError
 * for a command line it cannot act on (main prints the usage text and exits with 2).
 */
export interface Command {
  readonly name: string;
  run(context: CommandContext): Promise<number>;
}
