// The SDK under test: `e2b` (the newest pinned release, v2 create/connect
// routes) unless E2B_SDK names another installed alias, e.g. `e2b-2.45`
// (npm:e2b@2.45.0, v1 routes). Every spec file imports the SDK from here, so
// the whole suite runs unchanged against each release.
export const SDK_PACKAGE = process.env.E2B_SDK || 'e2b'
const sdk = await import(SDK_PACKAGE)
export const {
  Sandbox,
  Template,
  Volume,
  CommandExitError,
  FileNotFoundError,
  NotFoundError,
  RateLimitError,
  SandboxError,
  SandboxNotFoundError,
  VolumeNotFoundError,
  FilesystemEventType,
} = sdk
export default sdk
