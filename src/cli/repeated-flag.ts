// citty keeps only the last of a repeated flag: this collects every occurrence from the raw words.

/** Every value of `--name V` / `--name=V`, in order (the words after `--` are not in rawArgs). */
export function repeatedFlag(rawArgs: readonly string[], name: string): string[] {
  const values: string[] = [];
  for (let i = 0; i < rawArgs.length; i++) {
    const word = rawArgs[i]!;
    if (word === `--${name}` && i + 1 < rawArgs.length) values.push(rawArgs[++i]!);
    else if (word.startsWith(`--${name}=`)) values.push(word.slice(name.length + 3));
  }
  return values;
}
