// The page's stylesheet, embedded in the binary as text (imported `with { type: "text" }`).
declare module "*.css" {
  const text: string;
  export default text;
}
