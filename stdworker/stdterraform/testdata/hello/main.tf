# A module that needs no provider download: terraform_data, locals and
# outputs only. A destroy-time provisioner records the destroy in a file.
variable "name" {
  type = string
}

variable "marker" {
  type    = string
  default = ""
}

locals {
  greeting = "hello ${var.name}"
}

resource "terraform_data" "greeting" {
  input = {
    greeting = local.greeting
    marker   = var.marker
  }

  provisioner "local-exec" {
    when    = destroy
    command = self.input.marker == "" ? "true" : "echo destroyed > '${self.input.marker}'"
  }
}

output "greeting" {
  value = terraform_data.greeting.output.greeting
}

output "workspace" {
  value = terraform.workspace
}

output "token" {
  value     = "secret-${var.name}"
  sensitive = true
}
