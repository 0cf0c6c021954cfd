// Package manifests reads what the default install says of the
// controller's image, for the image and release tools: one source of truth
// for the tag that make image gives and the manifests deploy.
package manifests

import (
	"fmt"
	"os"

	"sigs.k8s.io/yaml"
)

// Kustomization is the default install's kustomization.
const Kustomization = "manifests/kustomization.yaml"

// imageName is the name the manifests give the controller's image, which
// the kustomization's images: entry replaces.
const imageName = "nhc-controller"

// Image returns the repository and tag a kustomization deploys the
// controller's image as: its images: entry named nhc-controller.
func Image(kustomization string) (repository, tag string, err error) {
	data, err := os.ReadFile(kustomization)
	if err != nil {
		return "", "", err
	}
	var k struct {
		Images []struct {
			Name    string `json:"name"`
			NewName string `json:"newName"`
			NewTag  string `json:"newTag"`
		} `json:"images"`
	}
	if err := yaml.Unmarshal(data, &k); err != nil {
		return "", "", fmt.Errorf("%s: %w", kustomization, err)
	}
	for _, image := range k.Images {
		if image.Name != imageName {
			continue
		}
		repository, tag = image.NewName, image.NewTag
		if repository == "" {
			repository = imageName
		}
		if tag == "" {
			tag = "latest"
		}
		return repository, tag, nil
	}
	return "", "", fmt.Errorf("%s names no image %s", kustomization, imageName)
}
