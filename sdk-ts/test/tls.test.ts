import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { tlsNodeOptions } from "../src/tls.js";

const dir = mkdtempSync(join(tmpdir(), "converge-tls-"));
const file = (name: string, body: string): string => {
  const p = join(dir, name);
  writeFileSync(p, body);
  return p;
};
const ca = file("ca.pem", "CA");
const cert = file("cert.pem", "CERT");
const key = file("key.pem", "KEY");

test("no files and no environment: no TLS options", () => {
  assert.equal(tlsNodeOptions(undefined, {}), undefined);
});

test("options are read; the environment fills what they leave out", () => {
  const o = tlsNodeOptions({ caFile: ca }, { CONVERGE_TLS_CERT: cert, CONVERGE_TLS_KEY: key });
  assert.equal(o?.ca?.toString(), "CA");
  assert.equal(o?.cert?.toString(), "CERT");
  assert.equal(o?.key?.toString(), "KEY");
});

test("an option wins over its environment variable", () => {
  const other = file("other-ca.pem", "OTHER");
  assert.equal(tlsNodeOptions({ caFile: other }, { CONVERGE_TLS_CA: ca })?.ca?.toString(), "OTHER");
});

test("a certificate without its key, and a missing file, are errors that name them", () => {
  assert.throws(() => tlsNodeOptions({ certFile: cert }, {}), /tls\.certFile and tls\.keyFile .*only a certificate/);
  assert.throws(() => tlsNodeOptions({ caFile: join(dir, "nope.pem") }, {}), /reading the TLS CA .*nope\.pem/);
});
