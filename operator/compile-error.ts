// Why an Agent could not be compiled: a reason for the status condition and a message saying what to fix.
export class CompileError extends Error {
  override name = 'CompileError';
  constructor(readonly reason: string, message: string) {
    super(message);
  }
}
