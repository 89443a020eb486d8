/** The package version; a test keeps it equal to package.json's. */
export const version = "0.1.0";

/** What the worker reports as its SDK in Subscribe, for diagnostics. */
export const sdkName = `converge-ts/${version}`;
