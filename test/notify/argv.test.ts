import { describe, expect, test } from "bun:test";
import {
  ArgvTemplateError,
  PLACEHOLDERS,
  compileArgvWords,
  compileTemplate,
  previewWord,
  renderArgv,
  splitTemplate,
} from "../../src/notify/argv.ts";

function splitError(template: string): string {
  try {
    splitTemplate(template);
  } catch (error) {
    expect(error).toBeInstanceOf(ArgvTemplateError);
    return (error as ArgvTemplateError).message;
  }
  throw new Error(`expected ${JSON.stringify(template)} to be refused`);
}

describe("splitTemplate quoting", () => {
  test.each([
    ["notify-send done", ["notify-send", "done"]],
    ["  a \t b  c  ", ["a", "b", "c"]],
    ["echo 'hello world'", ["echo", "hello world"]],
    ['echo "hello world"', ["echo", "hello world"]],
    ["echo 'a\\b'", ["echo", "a\\b"]],
    ['echo "a\\"b"', ["echo", 'a"b']],
    ['echo "a\\\\b"', ["echo", "a\\b"]],
    ['echo "a\\nb"', ["echo", "a\\nb"]],
    ["echo a\\ b", ["echo", "a b"]],
    ["echo \\'x", ["echo", "'x"]],
    ["echo 'it'\"'\"'s'", ["echo", "it's"]],
    ["echo pre'mid dle'post", ["echo", "premid dlepost"]],
    ["echo '' \"\"", ["echo", "", ""]],
    ["echo a\\\nb", ["echo", "ab"]],
    ["echo \"line\nbreak\"", ["echo", "line\nbreak"]],
    ["echo ~ * ? # [x] {a,b} !", ["echo", "~", "*", "?", "#", "[x]", "{a,b}", "!"]],
  ])("splits %p", (template, words) => {
    expect(splitTemplate(template)).toEqual(words);
  });

  test.each(["", "   ", "\t\t"])("refuses the empty template %p", (template) => {
    expect(splitError(template)).toContain("empty");
  });

  // Issue 10: a newline was taken as a space, so `rec.sh a\ntouch /tmp/p` ran rec.sh with "touch /tmp/p" as arguments.
  test.each([["rec.sh a\ntouch /tmp/p", 9], ["a\n", 2], ["\n", 1]])("refuses an unquoted newline in %p as a command separator", (template, at) => {
    expect(splitError(template)).toBe(`unquoted newline (a command separator) at character ${at} needs a shell; li runs the command without one (quote it to pass it literally)`);
  });

  test("refuses an unterminated single quote, naming where it opened", () => {
    expect(splitError("echo 'oops")).toBe("unterminated single quote opened at character 6");
  });

  test("refuses an unterminated double quote, naming where it opened", () => {
    expect(splitError('echo "oops \\"')).toBe("unterminated double quote opened at character 6");
  });

  test("refuses a trailing backslash", () => {
    expect(splitError("echo x\\")).toBe("trailing backslash at character 7");
  });
});

describe("splitTemplate and shell syntax", () => {
  const features: Array<[string, string]> = [
    ["|", "a | b"],
    ["||", "a || b"],
    ["&&", "a && b"],
    [";", "a; b"],
    ["&", "a &"],
    ["<", "a < in"],
    [">", "a > out"],
    ["$", "echo $HOME"],
    ["$(", "echo $(id)"],
    ["${", "echo ${HOME}"],
    ["`", "echo `id`"],
    ["(", "(a)"],
    [")", "echo a)"],
  ];

  test.each(features)("refuses unquoted %p, naming it and its position", (token, template) => {
    const message = splitError(template);
    expect(message).toContain(`unquoted '${token}'`);
    expect(message).toContain(`character ${template.indexOf(token) + 1}`);
    expect(message).toContain("needs a shell");
  });

  test.each(features)("keeps %p literal inside single quotes", (_token, template) => {
    expect(splitTemplate(`run '${template}'`)).toEqual(["run", template]);
  });

  test.each(features)("keeps %p literal inside double quotes", (_token, template) => {
    expect(splitTemplate(`run "${template}"`)).toEqual(["run", template]);
  });

  test.each(features)("keeps %p literal after a backslash", (token) => {
    const escaped = [...token].map((ch) => `\\${ch}`).join("");
    expect(splitTemplate(`run ${escaped}`)).toEqual(["run", token]);
  });
});

describe("compileTemplate", () => {
  test("accepts every declared placeholder, quoted or not", () => {
    const template = PLACEHOLDERS.map((name, i) => (i % 2 === 0 ? `{${name}}` : `'x={${name}}'`)).join(" ");
    const result = compileTemplate(`hook ${template}`, "--notify");
    expect(result.ok).toBe(true);
  });

  test("names the origin and the unknown placeholder, its word and character", () => {
    const result = compileTemplate("hook --id={id} --x=\"{stauts}\"", "--notify");
    expect(result).toEqual({
      ok: false,
      warning: expect.stringMatching(/^--notify: unknown placeholder \{stauts\} in word 3 \("--x=\{stauts}"\) at character 5; known: .*; the callback is disabled$/),
    });
  });

  test("treats braces that do not wrap an identifier as literal text", () => {
    const result = compileTemplate("jq '{}' {a-b} { id } {1} {{status}}", "--notify");
    expect(result).toEqual({ ok: true, argv: ["jq", "{}", "{a-b}", "{", "id", "}", "{1}", "{{status}}"] });
  });

  test("turns a split failure into a warning naming the origin", () => {
    const result = compileTemplate("hook {id} | tee log", "notify.on_terminal");
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.warning).toStartWith("notify.on_terminal: unquoted '|' (a pipe) at character 11");
    }
  });

  test("refuses an empty command word", () => {
    const result = compileTemplate("'' {id}", "--notify");
    expect(result).toEqual({ ok: false, warning: "--notify: the command (word 1) is empty; the callback is disabled" });
  });

  test("never shows a long secret argument in full", () => {
    const secret = "sk-live-0123456789abcdefSECRETSECRET";
    const result = compileTemplate(`curl -H 'Authorization: ${secret}{tokn}' https://hooks.example`, "--notify");
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.warning).not.toContain(secret);
      expect(result.warning).not.toContain("SECRET");
      expect(result.warning).toContain("Authorizatio…");
      expect(result.warning).toContain("word 3");
    }
  });

  test("never shows a long unknown placeholder name in full", () => {
    const result = compileTemplate("hook {abcdefghijklmnopqrstuvwxyz}", "--notify");
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.warning).not.toContain("mnopqrstuvwxyz");
  });
});

describe("compileArgvWords", () => {
  test("uses words literally: quotes and shell syntax are plain characters", () => {
    const words = ["sh-free", "a | b", "'quoted'", "$HOME", "{status}"];
    expect(compileArgvWords(words, "notify.on_terminal")).toEqual({ ok: true, argv: words });
  });

  test("refuses an empty list", () => {
    expect(compileArgvWords([], "notify.on_terminal")).toEqual({
      ok: false,
      warning: "notify.on_terminal: the argv is empty; the callback is disabled",
    });
  });

  test("refuses an unknown placeholder, naming the origin and the word", () => {
    const result = compileArgvWords(["hook", "{nope}"], "notify.on_terminal");
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.warning).toStartWith("notify.on_terminal: unknown placeholder {nope} in word 2");
  });

  test("refuses a NUL character, which no argv can carry", () => {
    const result = compileArgvWords(["hook", "a\0b"], "notify.on_terminal");
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.warning).toContain("NUL");
  });
});

describe("renderArgv", () => {
  test("substitutes placeholders inside words without re-splitting", () => {
    const compiled = compileTemplate("hook '{kind}:{id}' --status={status} {reason}", "--notify");
    if (!compiled.ok) throw new Error(compiled.warning);
    expect(renderArgv(compiled.argv, { kind: "session", id: "abc", status: "failed", reason: "two words; | $(rm)" })).toEqual([
      "hook",
      "session:abc",
      "--status=failed",
      "two words; | $(rm)",
    ]);
  });

  test("is single-pass: a value holding a placeholder is not expanded again", () => {
    expect(renderArgv(["{artifact_dir}/{status}"], { artifact_dir: "/tmp/{status}", status: "completed" })).toEqual([
      "/tmp/{status}/completed",
    ]);
  });

  test("renders a missing or null value as the empty string", () => {
    expect(renderArgv(["code={exit_code}", "{previous_status}"], { exit_code: null })).toEqual(["code=", ""]);
  });

  test("leaves text that is not a placeholder alone, including $-patterns", () => {
    expect(renderArgv(["{}", "{a-b}", "{id}"], { id: "$& $1 $$" })).toEqual(["{}", "{a-b}", "$& $1 $$"]);
  });
});

describe("previewWord", () => {
  test("keeps short words and cuts long ones at 12 characters", () => {
    expect(previewWord("short")).toBe("short");
    expect(previewWord("abcdefghijklm")).toBe("abcdefghijkl…");
  });
});
