/** Variables that hold credentials: .env.example marks them secret, Kubernetes keeps them in a Secret. */
export function isSecretVariable(name: string): boolean {
  return /TOKEN|PASSWORD|SECRET|_HEADERS$/.test(name);
}
