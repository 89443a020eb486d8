#!/usr/bin/env node
// converge-ts-types generates TypeScript types from kind manifests' JSON
// Schemas. See the README ("Typed inputs").
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { generateTypes, manifestsFromYAML, type ManifestSchemas } from "../typegen/index.js";

const usage = `usage: converge-ts-types [-o OUT.ts] [--sdk MODULE] MANIFEST.yaml...

Writes TypeScript types for the spec, status, config and operation inputs of
every kind manifest (documents with "type: manifest") in the files, to OUT.ts
or standard output. --sdk names the module Handler is imported from
(default @converge/sdk; "" for none).`;

function main(args: string[]): number {
  let out = "";
  let sdk: string | undefined;
  const files: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === "-h" || a === "--help") {
      console.log(usage);
      return 0;
    } else if (a === "-o" || a === "--out") {
      out = args[++i] ?? "";
      if (!out) return fail(`${a} needs a file name`);
    } else if (a === "--sdk") {
      sdk = args[++i];
      if (sdk === undefined) return fail("--sdk needs a module name");
    } else if (a.startsWith("-") && a !== "-") {
      return fail(`unknown flag ${a}`);
    } else {
      files.push(a);
    }
  }
  if (files.length === 0) {
    return fail("no manifest file given");
  }
  const manifests: ManifestSchemas[] = [];
  for (const f of files) {
    let text: string;
    try {
      text = readFileSync(f === "-" ? 0 : f, "utf8");
    } catch (e) {
      return fail(`read ${f}: ${(e as Error).message}`);
    }
    try {
      manifests.push(...manifestsFromYAML(text, f));
    } catch (e) {
      return fail((e as Error).message);
    }
  }
  if (manifests.length === 0) {
    return fail(`no manifest (a document with "type: manifest") in ${files.join(", ")}`);
  }
  let ts: string;
  try {
    ts = generateTypes(manifests, { source: files.join(", "), sdkModule: sdk });
  } catch (e) {
    return fail((e as Error).message);
  }
  if (out) {
    // The output's directory is made, as a generator run on a fresh
    // project (src/kinds.ts before src/ exists) expects.
    try {
      mkdirSync(dirname(out), { recursive: true });
      writeFileSync(out, ts);
    } catch (e) {
      console.error(`converge-ts-types: ${(e as Error).message}`);
      return 1;
    }
  } else {
    process.stdout.write(ts);
  }
  return 0;
}

function fail(msg: string): number {
  console.error(`converge-ts-types: ${msg}\n\n${usage}`);
  return 2;
}

process.exitCode = main(process.argv.slice(2));
