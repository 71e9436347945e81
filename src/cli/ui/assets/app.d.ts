// app.js is the page's script, embedded in the binary as text (imported `with { type: "text" }`).
declare const text: string;
export default text;
