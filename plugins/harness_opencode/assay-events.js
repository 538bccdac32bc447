// assay's OpenCode plugin: prints each retry OpenCode schedules as one JSON line on stdout,
// beside `opencode run --format json`'s own events (which leave retries out), so assay can
// tell a provider that keeps failing, or a long rate-limit wait, from an agent at work.
export const AssayEvents = async () => ({
  event: async ({ event }) => {
    const status = event.type === "session.status" ? event.properties?.status : undefined
    if (status?.type !== "retry") return
    process.stdout.write(JSON.stringify({
      type: "retry", timestamp: Date.now(), sessionID: event.properties.sessionID,
      attempt: status.attempt, message: status.message, next: status.next,
    }) + "\n")
  },
})
