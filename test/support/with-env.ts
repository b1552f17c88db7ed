/** Runs `work` with these environment variables (undefined removes one), then puts the previous values back. */
export async function withEnv<T>(
  env: Record<string, string | undefined>,
  work: () => Promise<T>,
): Promise<T> {
  const saved = Object.fromEntries(Object.keys(env).map((key) => [key, process.env[key]]));
  const assign = (values: Record<string, string | undefined>) => {
    for (const [key, value] of Object.entries(values)) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
  };
  assign(env);
  try {
    return await work();
  } finally {
    assign(saved);
  }
}
