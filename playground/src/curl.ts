/**
 * "Copy as curl": the request the preview sends, as a command to paste in
 * a shell. The key is written as $API_KEY, never the key itself.
 */
export function curlCommand(origin: string, body: string): string {
  // The body goes through a quoted here-document, so no character of it needs escaping;
  // JSON.stringify writes one line, which can never be the lone terminator word.
  return [
    `curl -X POST '${origin}/v1/pdf/generate' \\`,
    `  -H "Authorization: Bearer $API_KEY" \\`,
    `  -H 'Content-Type: application/json' \\`,
    `  --data-binary @- -o document.pdf <<'JSON'`,
    body,
    'JSON',
  ].join('\n');
}
